"""Signing a ``WorkerDispatch`` (control plane) and signing and checking a ``DispatchResult`` (scheduler
and control plane). The scheduler's full acceptance check of a dispatch is ``scheduler.verify``.
"""

from __future__ import annotations

import datetime as dt
import hmac
import json
import secrets
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import ValidationError

from seepient.crypto.signing import key_id_for, sign_fields, signature_valid
from seepient.protocol import (
    DispatchLimits,
    DispatchResult,
    PreparedActionDraft,
    WorkerDispatch,
    WorkspaceLease,
)
from seepient.protocol.actions import new_id
from seepient.protocol.errors import RefusalError

DEFAULT_DISPATCH_LIFETIME = dt.timedelta(seconds=60)
_UNSIGNED = "unsigned"


class ResultRejected(RefusalError):
    """A scheduler result the control plane must not believe; the message says why."""


def create_dispatch(
    action: PreparedActionDraft,
    *,
    lease: WorkspaceLease,
    limits: DispatchLimits,
    signing_key: Ed25519PrivateKey,
    now: dt.datetime | None = None,
    lifetime: dt.timedelta = DEFAULT_DISPATCH_LIFETIME,
) -> WorkerDispatch:
    """A fresh single-use dispatch of ``action``, signed over every field but the signature."""
    issued_at = now or dt.datetime.now(dt.UTC)
    unsigned = WorkerDispatch(
        dispatch_id=new_id("dsp"),
        nonce=secrets.token_urlsafe(32),
        issued_at=issued_at,
        expires_at=issued_at + lifetime,
        action=action,
        lease=lease,
        limits=limits,
        key_id=key_id_for(signing_key.public_key()),
        signature=_UNSIGNED,
    )
    return unsigned.model_copy(update={"signature": sign_fields(unsigned.signed_fields(), signing_key)})


def sign_dispatch_result(fields: Mapping[str, Any], signing_key: Ed25519PrivateKey) -> DispatchResult:
    """Build a ``DispatchResult`` from ``fields`` (all but ``key_id`` and ``signature``) and sign it."""
    unsigned = DispatchResult.model_validate(
        {**fields, "key_id": key_id_for(signing_key.public_key()), "signature": _UNSIGNED}
    )
    return unsigned.model_copy(update={"signature": sign_fields(unsigned.signed_fields(), signing_key)})


def verify_dispatch_result(
    raw_json: str | bytes,
    *,
    verify_key: Ed25519PublicKey,
    dispatch: WorkerDispatch,
) -> DispatchResult:
    """The scheduler's answer to ``dispatch`` if it is signed by ``verify_key`` and is about that very
    dispatch and action; otherwise ``ResultRejected``.
    """
    try:
        document = json.loads(raw_json)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ResultRejected(f"the result is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ResultRejected("the result is not a JSON object")
    key_id, signature = document.get("key_id"), document.get("signature")
    if not isinstance(key_id, str) or not isinstance(signature, str):
        raise ResultRejected("the result has no key_id or signature")
    if not hmac.compare_digest(key_id.encode(), key_id_for(verify_key).encode()):
        raise ResultRejected(f"the result is signed by key {key_id!r}, not by the scheduler's result key")
    if not signature_valid(document, signature, verify_key):
        raise ResultRejected("the result's signature does not verify with the scheduler's result key")
    try:
        result = DispatchResult.model_validate(document)
    except ValidationError as exc:
        raise ResultRejected(f"the signed result is not a valid DispatchResult: {exc}") from None
    if not hmac.compare_digest(result.dispatch_id.encode(), dispatch.dispatch_id.encode()):
        raise ResultRejected(
            f"the result is for dispatch {result.dispatch_id!r}, not {dispatch.dispatch_id!r}"
        )
    if not hmac.compare_digest(result.action_digest.encode(), dispatch.action.digest.encode()):
        raise ResultRejected("the result is for another action than the one dispatched")
    return result
