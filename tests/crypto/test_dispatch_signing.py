"""Signed dispatches and results: the control plane believes only the scheduler's signature, for its own dispatch."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from seepient.crypto import (
    ResultRejected,
    create_dispatch,
    generate_signing_key,
    key_id_for,
    sign_dispatch_result,
    sign_fields,
    signature_valid,
    verify_dispatch_result,
)
from seepient.protocol import (
    ContainerSettings,
    DispatchLimits,
    PreparedActionDraft,
    ShellCommand,
    WorkerDispatch,
    WorkspaceLease,
)

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)


def _dispatch() -> WorkerDispatch:
    action = PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="shell",
        kind="shell",
        payload=ShellCommand(command="true", cwd="/w"),
        read_only=False,
        summary="true",
    )
    return create_dispatch(
        action,
        lease=WorkspaceLease(tenant="default", workspace="/w", expires_at=NOW + dt.timedelta(minutes=5)),
        limits=DispatchLimits(cpus=1, memory_mb=256, pids=32, timeout_ms=1000, output_bytes=1000),
        signing_key=generate_signing_key(),
        now=NOW,
    )


def _result_fields(dispatch: WorkerDispatch) -> dict[str, object]:
    return {
        "dispatch_id": dispatch.dispatch_id,
        "action_digest": dispatch.action.digest,
        "exit_code": 0,
        "stdout": "ok\n",
        "duration_ms": 12,
        "container": ContainerSettings(
            network_mode="none",
            read_only_root=True,
            cap_drop=("ALL",),
            user="65534:65534",
            no_new_privileges=True,
        ),
        "finished_at": NOW,
    }


def test_create_dispatch_signs_every_field_and_is_unique() -> None:
    first, second = _dispatch(), _dispatch()
    assert first.dispatch_id != second.dispatch_id and first.nonce != second.nonce
    assert first.expires_at - first.issued_at == dt.timedelta(seconds=60)
    document = json.loads(first.model_dump_json())
    assert set(document) == {
        "dispatch_id", "nonce", "issued_at", "expires_at", "action", "lease", "limits", "key_id", "signature",
    }  # fmt: skip
    assert document["action"]["digest"] == first.action.digest


def test_a_signed_result_round_trips_and_is_bound_to_its_dispatch() -> None:
    dispatch, key = _dispatch(), generate_signing_key()
    result = sign_dispatch_result(_result_fields(dispatch), key)
    assert result.key_id == key_id_for(key.public_key())
    believed = verify_dispatch_result(
        result.model_dump_json(), verify_key=key.public_key(), dispatch=dispatch
    )
    assert believed == result and believed.stdout == "ok\n"
    with pytest.raises(ResultRejected, match="for dispatch"):
        verify_dispatch_result(result.model_dump_json(), verify_key=key.public_key(), dispatch=_dispatch())


def test_a_forged_or_altered_result_is_rejected() -> None:
    dispatch, key, attacker = _dispatch(), generate_signing_key(), generate_signing_key()
    result = sign_dispatch_result(_result_fields(dispatch), key)

    altered = json.loads(result.model_dump_json())
    altered["exit_code"] = 1
    with pytest.raises(ResultRejected, match="signature does not verify"):
        verify_dispatch_result(json.dumps(altered), verify_key=key.public_key(), dispatch=dispatch)

    # Signed by another key, even one that claims the scheduler's key id.
    forged = result.model_copy(update={"signature": sign_fields(result.signed_fields(), attacker)})
    with pytest.raises(ResultRejected, match="signature does not verify"):
        verify_dispatch_result(forged.model_dump_json(), verify_key=key.public_key(), dispatch=dispatch)
    own = sign_dispatch_result(_result_fields(dispatch), attacker)
    with pytest.raises(ResultRejected, match="not by the scheduler's result key"):
        verify_dispatch_result(own.model_dump_json(), verify_key=key.public_key(), dispatch=dispatch)

    for junk in ("nope", "[]", "{}"):
        with pytest.raises(ResultRejected):
            verify_dispatch_result(junk, verify_key=key.public_key(), dispatch=dispatch)


def test_a_result_signed_for_another_action_is_rejected() -> None:
    dispatch, key = _dispatch(), generate_signing_key()
    fields = {**_result_fields(dispatch), "action_digest": "0" * 64}
    result = sign_dispatch_result(fields, key)
    assert signature_valid(result.signed_fields(), result.signature, key.public_key())
    with pytest.raises(ResultRejected, match="another action"):
        verify_dispatch_result(result.model_dump_json(), verify_key=key.public_key(), dispatch=dispatch)
