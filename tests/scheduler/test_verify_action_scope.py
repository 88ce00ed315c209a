"""What a signed, fresh dispatch may still not ask for: a shell working directory outside its lease, or an
action kind a worker does not run."""

from __future__ import annotations

import datetime as dt

import pytest

from seepient.crypto import create_dispatch
from seepient.protocol import DispatchLimits, FetchRequest, PreparedActionDraft, ShellCommand, WorkspaceLease
from seepient.scheduler import DispatchRefused, RefusalReason, verify_dispatch
from tests.scheduler.conftest import NOW, Deployed


def _signed(deployed: Deployed, payload, kind: str) -> str:
    action = PreparedActionDraft(
        session_id="s", call_id="c", tool=kind, kind=kind, payload=payload, read_only=False, summary="x"
    )
    dispatch = create_dispatch(
        action,
        lease=WorkspaceLease(
            tenant="default", workspace=str(deployed.workspace), expires_at=NOW + dt.timedelta(minutes=5)
        ),
        limits=DispatchLimits(cpus=1, memory_mb=256, pids=32, timeout_ms=1000, output_bytes=1000),
        signing_key=deployed.signing_key,
        now=NOW,
    )
    return dispatch.model_dump_json()


def _refusal(deployed: Deployed, raw: str) -> RefusalReason:
    with pytest.raises(DispatchRefused) as refused:
        verify_dispatch(raw, config=deployed.config, nonce_store=deployed.nonces, now=NOW)
    return refused.value.reason


@pytest.mark.parametrize(
    "cwd", ["/etc", "{root}", "{workspace}/../..", "{workspace}/missing", "{workspace}/link"]
)
def test_a_working_directory_outside_the_lease_is_refused(deployed: Deployed, cwd: str) -> None:
    (deployed.workspace / "link").symlink_to("/etc")
    path = cwd.format(root=deployed.root, workspace=deployed.workspace)
    raw = _signed(deployed, ShellCommand(command="ls", cwd=path), "shell")
    assert _refusal(deployed, raw) is RefusalReason.LEASE_OUTSIDE_ROOT


def test_a_working_directory_inside_the_lease_is_accepted(deployed: Deployed) -> None:
    (deployed.workspace / "src").mkdir()
    raw = _signed(deployed, ShellCommand(command="ls", cwd=str(deployed.workspace / "src")), "shell")
    assert verify_dispatch(raw, config=deployed.config, nonce_store=deployed.nonces, now=NOW).workspace == (
        deployed.workspace.resolve()
    )


def test_an_action_a_worker_does_not_run_is_refused(deployed: Deployed) -> None:
    raw = _signed(deployed, FetchRequest(url="http://169.254.169.254/latest/meta-data/"), "fetch")
    assert _refusal(deployed, raw) is RefusalReason.UNSUPPORTED_ACTION
