"""``scheduler.json``: where the scheduler listens, whom it trusts, which tenants and limits it serves.

The shape is DESIGN.md §8 ("Worker mode"); relative paths are read relative to the config file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, Field, ValidationError

from seepient.crypto import CryptoFileError, load_signing_key, load_verify_key
from seepient.protocol.errors import ConfigurationError
from seepient.protocol.frozen import deferred_config


class SchedulerConfigError(ConfigurationError):
    """A scheduler config that cannot be used; the message names the file and the field."""


class _Section(BaseModel):
    model_config = deferred_config(extra="forbid", frozen=True, populate_by_name=True)


class ListenSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8443, ge=1, le=65535)


class SchedulerMtls(_Section):
    ca_cert_path: Path = Field(alias="caCertPath")
    cert_path: Path = Field(alias="certPath")
    key_path: Path = Field(alias="keyPath")
    allowed_client_identities: tuple[str, ...] = Field(alias="allowedClientIdentities", min_length=1)


class TenantSettings(_Section):
    workspace_root: Path = Field(alias="workspaceRoot")


class LimitMaxima(_Section):
    max_cpus: float = Field(alias="maxCpus", gt=0)
    max_memory_mb: int = Field(alias="maxMemoryMb", gt=0)
    max_pids: int = Field(alias="maxPids", gt=0)
    max_timeout_ms: int = Field(alias="maxTimeoutMs", gt=0)
    max_output_bytes: int = Field(alias="maxOutputBytes", gt=0)


class SchedulerConfig(_Section):
    listen: ListenSettings = Field(default_factory=ListenSettings)
    mtls: SchedulerMtls
    dispatch_keys: dict[str, Path] = Field(alias="dispatchKeys", min_length=1)
    result_signing_key_path: Path = Field(alias="resultSigningKeyPath")
    tenants: dict[str, TenantSettings] = Field(min_length=1)
    limits: LimitMaxima
    worker_image: str = Field(alias="workerImage")
    state_dir: Path = Field(alias="stateDir")
    pool_size: int = Field(default=0, alias="poolSize", ge=0, le=16)
    """Warm single-use containers kept per (workspace, limits) in use; 0 starts each one on demand."""
    metrics_listen: ListenSettings | None = Field(default=None, alias="metricsListen")
    """A plain-HTTP listener serving only ``GET /metrics`` (for a Prometheus without a client certificate);
    its address is its protection, so keep it on loopback or a monitoring network. ``/metrics`` is also served
    on the mTLS listener, to allowed identities."""
    log_format: Literal["text", "json"] = Field(default="text", alias="logFormat")
    """``json``: the scheduler's events (each audit record, too) as one JSON object a line on stderr."""

    def dispatch_verify_key(self, key_id: str) -> Ed25519PublicKey | None:
        """The public key configured for ``key_id``, or None when no such key is configured.

        Read on each call so a rotated key file takes effect without a restart.
        """
        path = self.dispatch_keys.get(key_id)
        return None if path is None else load_verify_key(path)

    def result_signing_key(self) -> Ed25519PrivateKey:
        return load_signing_key(self.result_signing_key_path)


def load_scheduler_config(path: Path) -> SchedulerConfig:
    """Read and check ``scheduler.json``, including that every key file it names loads."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SchedulerConfigError(f"cannot read scheduler config {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise SchedulerConfigError(f"{path} is not valid JSON: {exc}") from None
    try:
        config = SchedulerConfig.model_validate(document)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '(top level)'}: {error['msg']}"
            for error in exc.errors()
        )
        raise SchedulerConfigError(f"{path}: {problems}") from None
    config = _relative_to(config, path.parent.absolute())
    try:
        for key_id in config.dispatch_keys:
            config.dispatch_verify_key(key_id)
        config.result_signing_key()
    except CryptoFileError as exc:
        raise SchedulerConfigError(f"{path}: {exc}") from None
    for name, tenant in config.tenants.items():
        if not tenant.workspace_root.is_dir():
            raise SchedulerConfigError(
                f"{path}: tenant {name!r} has workspaceRoot {tenant.workspace_root}, which is not a directory"
            )
    return config


def _relative_to(config: SchedulerConfig, base: Path) -> SchedulerConfig:
    def at(value: Path) -> Path:
        return value if value.is_absolute() else base / value

    return config.model_copy(
        update={
            "mtls": config.mtls.model_copy(
                update={
                    "ca_cert_path": at(config.mtls.ca_cert_path),
                    "cert_path": at(config.mtls.cert_path),
                    "key_path": at(config.mtls.key_path),
                }
            ),
            "dispatch_keys": {key_id: at(key_path) for key_id, key_path in config.dispatch_keys.items()},
            "result_signing_key_path": at(config.result_signing_key_path),
            "tenants": {
                name: tenant.model_copy(update={"workspace_root": at(tenant.workspace_root)})
                for name, tenant in config.tenants.items()
            },
            "state_dir": at(config.state_dir),
        }
    )
