"""``seepient certs init``: every certificate, key and config file of a worker-mode deployment, written
all or nothing into one directory (file names and config shapes: DESIGN.md §8, "Worker mode").
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seepient.crypto.certificates import (
    CONTROL_PLANE_IDENTITY,
    create_certificate_authority,
    issue_client_certificate,
    issue_server_certificate,
)
from seepient.crypto.files import CryptoFileError, write_public_file, write_secret_file
from seepient.crypto.signing import generate_signing_key, key_id_for, private_key_pem, public_key_pem

SCHEDULER_PORT = 8443
WORKER_IMAGE = "seepient/worker:latest"
DEFAULT_TENANT = "default"
DEFAULT_TIMEOUT_MS = 30_000
DEFAULT_LIMITS = {
    "maxCpus": 2.0,
    "maxMemoryMb": 2048,
    "maxPids": 256,
    "maxTimeoutMs": 600_000,
    "maxOutputBytes": 4_000_000,
}
SECRET_FILES = (
    "ca-key.pem",
    "scheduler-key.pem",
    "control-plane-key.pem",
    "dispatch-signing.key",
    "result-signing.key",
)
PUBLIC_FILES = (
    "ca.pem",
    "scheduler.pem",
    "control-plane.pem",
    "dispatch-signing.pub",
    "result-signing.pub",
    "scheduler.json",
    "control-plane.json",
)
ALL_FILES = SECRET_FILES + PUBLIC_FILES


@dataclass(frozen=True)
class Deployment:
    """What ``init_deployment`` wrote: the directory, each file it wrote, and the dispatch key's id."""

    directory: Path
    files: tuple[Path, ...]
    dispatch_key_id: str
    result_key_id: str


def init_deployment(
    directory: Path,
    *,
    workspace_root: Path,
    scheduler_hosts: Sequence[str] = (),
    force: bool = False,
) -> Deployment:
    """Create the CA, certificates, signing keys and both configs in ``directory``.

    Refuses (``CryptoFileError``, nothing written) when any of the files exists, unless ``force``;
    ``ValueError`` for a bad host name or a missing workspace root.
    """
    directory = directory.expanduser().absolute()
    workspace_root = workspace_root.expanduser()
    if not workspace_root.is_dir():
        raise ValueError(
            f"workspace root {workspace_root} is not a directory; create it or pass --workspace-root"
        )
    workspace_root = workspace_root.resolve()
    if directory.exists() and not directory.is_dir():
        raise CryptoFileError(f"{directory} exists and is not a directory")
    existing = [name for name in ALL_FILES if os.path.lexists(directory / name)]
    if existing and not force:
        raise CryptoFileError(
            f"{directory} already holds {', '.join(existing)}; refusing to overwrite (pass --force to replace them)"
        )

    contents = _generate(directory, workspace_root=workspace_root, scheduler_hosts=list(scheduler_hosts))
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise CryptoFileError(f"cannot create {directory}: {exc.strerror or exc}") from None
    # Key material is generated before anything touches the disk, so a bad argument leaves no files;
    # a write that fails half-way removes what this run wrote, so a retry does not meet a half set.
    written: list[Path] = []
    try:
        for name in ALL_FILES:
            path = directory / name
            writer = write_secret_file if name in SECRET_FILES else write_public_file
            writer(path, contents.files[name], overwrite=force)
            written.append(path)
    except CryptoFileError:
        if not force:
            for path in written:
                path.unlink(missing_ok=True)
        raise
    return Deployment(directory, tuple(written), contents.dispatch_key_id, contents.result_key_id)


@dataclass(frozen=True)
class _Contents:
    files: dict[str, bytes]
    dispatch_key_id: str
    result_key_id: str


def _generate(directory: Path, *, workspace_root: Path, scheduler_hosts: list[str]) -> _Contents:
    ca = create_certificate_authority()
    server = issue_server_certificate(ca, ["localhost", "127.0.0.1", *scheduler_hosts])
    client = issue_client_certificate(ca, CONTROL_PLANE_IDENTITY)
    dispatch_key = generate_signing_key()
    result_key = generate_signing_key()
    dispatch_key_id = key_id_for(dispatch_key.public_key())
    endpoint_host = scheduler_hosts[0] if scheduler_hosts else "127.0.0.1"
    if ":" in endpoint_host:
        endpoint_host = f"[{endpoint_host}]"

    def at(name: str) -> str:
        return str(directory / name)

    scheduler_config: dict[str, Any] = {
        "listen": {"host": "127.0.0.1", "port": SCHEDULER_PORT},
        "mtls": {
            "caCertPath": at("ca.pem"),
            "certPath": at("scheduler.pem"),
            "keyPath": at("scheduler-key.pem"),
            "allowedClientIdentities": [CONTROL_PLANE_IDENTITY],
        },
        "dispatchKeys": {dispatch_key_id: at("dispatch-signing.pub")},
        "resultSigningKeyPath": at("result-signing.key"),
        "tenants": {"default": {"workspaceRoot": str(workspace_root)}},
        "limits": dict(DEFAULT_LIMITS),
        "workerImage": WORKER_IMAGE,
        "stateDir": at("scheduler-state"),
    }
    control_plane_config: dict[str, Any] = {
        "execution": {
            "backend": "docker-worker",
            "schedulerEndpoint": f"https://{endpoint_host}:{SCHEDULER_PORT}",
            "mtls": {
                "caCertPath": at("ca.pem"),
                "clientCertPath": at("control-plane.pem"),
                "clientKeyPath": at("control-plane-key.pem"),
            },
            "workerImage": WORKER_IMAGE,
            "defaultTimeoutMs": DEFAULT_TIMEOUT_MS,
            "dispatchSigningKeyPath": at("dispatch-signing.key"),
            "resultVerifyKeyPath": at("result-signing.pub"),
            "tenant": DEFAULT_TENANT,
        }
    }
    files = {
        "ca.pem": ca.certificate_pem(),
        "ca-key.pem": ca.private_key_pem(),
        "scheduler.pem": server.certificate_pem(),
        "scheduler-key.pem": server.private_key_pem(),
        "control-plane.pem": client.certificate_pem(),
        "control-plane-key.pem": client.private_key_pem(),
        "dispatch-signing.key": private_key_pem(dispatch_key),
        "dispatch-signing.pub": public_key_pem(dispatch_key.public_key()),
        "result-signing.key": private_key_pem(result_key),
        "result-signing.pub": public_key_pem(result_key.public_key()),
        "scheduler.json": _json(scheduler_config),
        "control-plane.json": _json(control_plane_config),
    }
    return _Contents(files, dispatch_key_id, key_id_for(result_key.public_key()))


def _json(value: dict[str, Any]) -> bytes:
    return (json.dumps(value, indent=2) + "\n").encode()
