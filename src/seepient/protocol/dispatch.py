"""Worker-mode wire types: the signed ``WorkerDispatch`` the control plane sends and the signed
``DispatchResult`` the scheduler answers with. Pure data; signing and checking live in crypto/ and scheduler/.
"""

from __future__ import annotations

from typing import Any

from pydantic import AwareDatetime, Field

from seepient.protocol.actions import PreparedActionDraft
from seepient.protocol.frozen import FrozenModel

SIGNATURE_FIELD = "signature"
"""The one field a signature does not cover; every other field of a signed document is signed."""


class WorkspaceLease(FrozenModel):
    """Binds a dispatch to one tenant's workspace: an absolute path on the scheduler's host, until ``expires_at``."""

    tenant: str = Field(min_length=1, max_length=128)
    workspace: str = Field(min_length=1, max_length=4096)
    expires_at: AwareDatetime


class DispatchLimits(FrozenModel):
    """Resources the worker container gets; the scheduler refuses any above its configured maxima."""

    cpus: float = Field(gt=0)
    memory_mb: int = Field(gt=0)
    pids: int = Field(gt=0)
    timeout_ms: int = Field(gt=0)
    output_bytes: int = Field(gt=0)


class WorkerDispatch(FrozenModel):
    """One prepared action sent to the worker scheduler, single-use and short-lived.

    ``signature`` is the base64url Ed25519 signature, by the key named ``key_id``, over the RFC 8785
    canonical JSON of every other field exactly as serialised (``action`` includes its ``digest``).
    """

    dispatch_id: str = Field(min_length=1, max_length=128)
    nonce: str = Field(min_length=16, max_length=128)
    issued_at: AwareDatetime
    expires_at: AwareDatetime
    action: PreparedActionDraft
    lease: WorkspaceLease
    limits: DispatchLimits
    key_id: str = Field(min_length=1, max_length=128)
    signature: str = Field(min_length=1, max_length=256)

    def signed_fields(self) -> dict[str, Any]:
        """The JSON object the signature covers: the whole dispatch minus ``signature``."""
        return self.model_dump(mode="json", exclude={SIGNATURE_FIELD})


class ContainerSettings(FrozenModel):
    """What the container engine reported about the container that ran the action (evidence, not intent)."""

    network_mode: str
    read_only_root: bool
    cap_drop: tuple[str, ...] = ()
    cap_add: tuple[str, ...] = ()
    user: str
    no_new_privileges: bool
    memory_bytes: int | None = None
    nano_cpus: int | None = None
    pids_limit: int | None = None


class DispatchResult(FrozenModel):
    """The outcome of one dispatch, signed by the scheduler's result key over every field but ``signature``.

    ``error`` is set when the action could not be run at all (the container did not start); the
    output fields then stay empty.
    """

    dispatch_id: str
    action_digest: str
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    output_truncated: bool = False
    duration_ms: int = Field(ge=0)
    timed_out: bool = False
    oom_killed: bool = False
    container: ContainerSettings | None = None
    error: str | None = None
    finished_at: AwareDatetime
    key_id: str = Field(min_length=1, max_length=128)
    signature: str = Field(min_length=1, max_length=256)

    def signed_fields(self) -> dict[str, Any]:
        """The JSON object the signature covers: the whole result minus ``signature``."""
        return self.model_dump(mode="json", exclude={SIGNATURE_FIELD})
