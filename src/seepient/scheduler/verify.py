"""The scheduler's acceptance check of a ``WorkerDispatch`` (DESIGN.md §4, invariant 7): signature by a
configured key over every field, times, lease, limits, action digest, and a nonce spent exactly once.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hmac
import json
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from seepient.crypto import CryptoFileError, signature_valid
from seepient.protocol import FileChange, ShellCommand, WorkerDispatch
from seepient.protocol.actions import payload_digest
from seepient.protocol.errors import RefusalError
from seepient.scheduler.config import SchedulerConfig
from seepient.scheduler.nonces import NonceStore

MAX_DISPATCH_BYTES = 32 * 1024 * 1024
MAX_DISPATCH_LIFETIME = dt.timedelta(minutes=5)
CLOCK_SKEW = dt.timedelta(seconds=30)
"""How far the control plane's clock may run ahead of ours before ``issued_at`` counts as the future."""


class RefusalReason(StrEnum):
    MALFORMED = "malformed"
    UNKNOWN_KEY = "unknown_key"
    BAD_SIGNATURE = "bad_signature"
    EXPIRED = "expired"
    NOT_YET_VALID = "not_yet_valid"
    LIFETIME_TOO_LONG = "lifetime_too_long"
    DIGEST_MISMATCH = "digest_mismatch"
    UNKNOWN_TENANT = "unknown_tenant"
    LEASE_EXPIRED = "lease_expired"
    LEASE_OUTSIDE_ROOT = "lease_outside_root"
    LIMITS_EXCEEDED = "limits_exceeded"
    REPLAYED = "replayed"
    UNSUPPORTED_ACTION = "unsupported_action"


class DispatchRefused(RefusalError):
    """A dispatch the scheduler will not run: ``reason`` for programs, the message for people."""

    def __init__(self, reason: RefusalReason, message: str) -> None:
        super().__init__(f"{reason.value}: {message}")
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class VerifiedDispatch:
    """An accepted dispatch and the real directory its lease covers (symlinks resolved), to mount."""

    dispatch: WorkerDispatch
    workspace: Path


def verify_dispatch(
    raw_json: str | bytes,
    *,
    config: SchedulerConfig,
    nonce_store: NonceStore,
    now: dt.datetime,
) -> VerifiedDispatch:
    """Accept ``raw_json`` as a dispatch to run now, or raise ``DispatchRefused`` saying why.

    The nonce is spent last, so only a dispatch that passed every other check can use it up.
    """
    document = _parse(raw_json)
    _check_signature(document, config)
    stated_digest = _stated_digest(document)
    with _refused_on(ValidationError, RefusalReason.MALFORMED, "the signed document is not a WorkerDispatch"):
        dispatch = WorkerDispatch.model_validate(document)
    if not hmac.compare_digest(stated_digest.encode(), payload_digest(dispatch.action.payload).encode()):
        raise DispatchRefused(RefusalReason.DIGEST_MISMATCH, "the action's digest does not match its payload")
    _check_times(dispatch, now)
    workspace = _check_lease(dispatch, config, now)
    _check_limits(dispatch, config)
    if not nonce_store.consume(dispatch.nonce, dispatch.dispatch_id, expires_at=dispatch.expires_at, now=now):
        raise DispatchRefused(
            RefusalReason.REPLAYED, f"dispatch {dispatch.dispatch_id!r} or its nonce was already used"
        )
    return VerifiedDispatch(dispatch, workspace)


@contextlib.contextmanager
def _refused_on(
    errors: type[Exception] | tuple[type[Exception], ...], reason: RefusalReason, what: str
) -> Iterator[None]:
    """An error of ``errors`` in the block is a refusal for ``reason``: ``what`` went wrong, and the error."""
    try:
        yield
    except errors as exc:
        raise DispatchRefused(reason, f"{what}: {exc}") from None


def _parse(raw_json: str | bytes) -> dict[str, Any]:
    if len(raw_json) > MAX_DISPATCH_BYTES:
        raise DispatchRefused(
            RefusalReason.MALFORMED, f"the dispatch is larger than {MAX_DISPATCH_BYTES} bytes"
        )
    with _refused_on((ValueError, UnicodeDecodeError), RefusalReason.MALFORMED, "the dispatch is not JSON"):
        document = json.loads(raw_json, object_pairs_hook=_refuse_duplicate_keys)
    if not isinstance(document, dict):
        raise DispatchRefused(RefusalReason.MALFORMED, "the dispatch is not a JSON object")
    return document


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Parsers disagree on which of two equal keys wins; one object, one meaning, before it is signed.
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("an object repeats a key")
    return dict(pairs)


def _check_signature(document: dict[str, Any], config: SchedulerConfig) -> None:
    key_id, signature = document.get("key_id"), document.get("signature")
    if not isinstance(key_id, str) or not isinstance(signature, str):
        raise DispatchRefused(RefusalReason.MALFORMED, "the dispatch has no key_id or signature")
    with _refused_on(CryptoFileError, RefusalReason.UNKNOWN_KEY, f"the key for {key_id!r} cannot be loaded"):
        verify_key = config.dispatch_verify_key(key_id)
    if verify_key is None:
        raise DispatchRefused(RefusalReason.UNKNOWN_KEY, f"no dispatch key {key_id!r} is configured")
    if not signature_valid(document, signature, verify_key):
        raise DispatchRefused(
            RefusalReason.BAD_SIGNATURE, f"the signature does not verify with key {key_id!r}"
        )


def _stated_digest(document: dict[str, Any]) -> str:
    action = document.get("action")
    if not isinstance(action, dict) or not isinstance(action.get("digest"), str):
        raise DispatchRefused(RefusalReason.MALFORMED, "the dispatch's action carries no digest")
    # The digest is compared here, in constant time, rather than by the model's own check.
    document["action"] = {name: value for name, value in action.items() if name != "digest"}
    return action["digest"]


def _check_times(dispatch: WorkerDispatch, now: dt.datetime) -> None:
    if dispatch.expires_at <= dispatch.issued_at:
        raise DispatchRefused(RefusalReason.MALFORMED, "the dispatch expires before it was issued")
    if dispatch.expires_at - dispatch.issued_at > MAX_DISPATCH_LIFETIME:
        raise DispatchRefused(
            RefusalReason.LIFETIME_TOO_LONG,
            f"the dispatch is valid for {dispatch.expires_at - dispatch.issued_at}, more than {MAX_DISPATCH_LIFETIME}",
        )
    if now >= dispatch.expires_at:
        raise DispatchRefused(
            RefusalReason.EXPIRED, f"the dispatch expired at {dispatch.expires_at.isoformat()}"
        )
    if dispatch.issued_at > now + CLOCK_SKEW:
        raise DispatchRefused(
            RefusalReason.NOT_YET_VALID,
            f"the dispatch is issued in the future ({dispatch.issued_at.isoformat()})",
        )


def _check_lease(dispatch: WorkerDispatch, config: SchedulerConfig, now: dt.datetime) -> Path:
    lease = dispatch.lease
    tenant = config.tenants.get(lease.tenant)
    if tenant is None:
        raise DispatchRefused(RefusalReason.UNKNOWN_TENANT, f"tenant {lease.tenant!r} is not configured")
    if now >= lease.expires_at:
        raise DispatchRefused(
            RefusalReason.LEASE_EXPIRED, f"the workspace lease expired at {lease.expires_at.isoformat()}"
        )
    requested = PurePosixPath(lease.workspace)
    if "\x00" in lease.workspace or not requested.is_absolute() or ".." in requested.parts:
        raise DispatchRefused(
            RefusalReason.LEASE_OUTSIDE_ROOT,
            f"the leased workspace {lease.workspace!r} must be an absolute path without '..'",
        )
    cannot = f"the leased workspace {lease.workspace!r} cannot be resolved"
    with _refused_on((OSError, RuntimeError), RefusalReason.LEASE_OUTSIDE_ROOT, cannot):
        root = tenant.workspace_root.resolve(strict=True)
        workspace = Path(requested).resolve(strict=True)
    # Symlinks are resolved first, so a link inside the root that points out of it is judged by its target.
    if not workspace.is_relative_to(root) or not workspace.is_dir():
        raise DispatchRefused(
            RefusalReason.LEASE_OUTSIDE_ROOT,
            f"the leased workspace {lease.workspace!r} is not a directory inside tenant {lease.tenant!r}'s root",
        )
    payload = dispatch.action.payload
    if isinstance(payload, FileChange):
        target = PurePosixPath(payload.path)
        if target.is_absolute() or ".." in target.parts:
            raise DispatchRefused(
                RefusalReason.LEASE_OUTSIDE_ROOT,
                f"the file change's path {payload.path!r} must be relative to the workspace without '..'",
            )
    elif isinstance(payload, ShellCommand):
        cwd = Path(payload.cwd) if Path(payload.cwd).is_absolute() else workspace / payload.cwd
        try:
            resolved_cwd = cwd.resolve(strict=True)
        except (OSError, RuntimeError):
            resolved_cwd = None
        if resolved_cwd is None or not resolved_cwd.is_relative_to(workspace) or not resolved_cwd.is_dir():
            raise DispatchRefused(
                RefusalReason.LEASE_OUTSIDE_ROOT,
                f"the command's working directory {payload.cwd!r} is not a directory inside the leased workspace",
            )
    else:
        raise DispatchRefused(
            RefusalReason.UNSUPPORTED_ACTION,
            f"a worker runs shell commands and file changes, not {dispatch.action.kind} actions",
        )
    return workspace


def _check_limits(dispatch: WorkerDispatch, config: SchedulerConfig) -> None:
    asked, maxima = dispatch.limits, config.limits
    over = [
        f"{name} {value} > {maximum}"
        for name, value, maximum in (
            ("cpus", asked.cpus, maxima.max_cpus),
            ("memory_mb", asked.memory_mb, maxima.max_memory_mb),
            ("pids", asked.pids, maxima.max_pids),
            ("timeout_ms", asked.timeout_ms, maxima.max_timeout_ms),
            ("output_bytes", asked.output_bytes, maxima.max_output_bytes),
        )
        if value > maximum
    ]
    if over:
        raise DispatchRefused(
            RefusalReason.LIMITS_EXCEEDED, "limits above the scheduler's maxima: " + ", ".join(over)
        )
