"""A deployment written by ``init_deployment`` and a helper that signs dispatches against it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from seepient.crypto import create_dispatch, init_deployment, load_signing_key
from seepient.protocol import (
    DispatchLimits,
    PreparedActionDraft,
    ShellCommand,
    WorkerDispatch,
    WorkspaceLease,
)
from seepient.scheduler import NonceStore, SchedulerConfig, load_scheduler_config

NOW = dt.datetime(2026, 11, 29, 12, 0, 0, tzinfo=dt.UTC)


@dataclass
class Deployed:
    directory: Path
    root: Path
    workspace: Path
    config: SchedulerConfig
    signing_key: Ed25519PrivateKey
    nonces: NonceStore

    def dispatch(
        self, *, now: dt.datetime = NOW, workspace: str | None = None, **limits: Any
    ) -> WorkerDispatch:
        action = PreparedActionDraft(
            session_id="ses_1",
            call_id="call_1",
            tool="shell",
            kind="shell",
            payload=ShellCommand(command="echo hi", cwd=str(self.workspace)),
            read_only=False,
            summary="echo hi",
        )
        lease = WorkspaceLease(
            tenant="default",
            workspace=workspace or str(self.workspace),
            expires_at=now + dt.timedelta(minutes=10),
        )
        chosen = {"cpus": 1.0, "memory_mb": 512, "pids": 64, "timeout_ms": 30_000, "output_bytes": 100_000}
        chosen.update(limits)
        return create_dispatch(
            action, lease=lease, limits=DispatchLimits(**chosen), signing_key=self.signing_key, now=now
        )


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[Deployed]:
    root = tmp_path / "tenants" / "default"
    workspace = root / "project"
    workspace.mkdir(parents=True)
    directory = tmp_path / "deploy"
    init_deployment(directory, workspace_root=root)
    config = load_scheduler_config(directory / "scheduler.json")
    nonces = NonceStore.open(config.state_dir)
    yield Deployed(
        directory, root, workspace, config, load_signing_key(directory / "dispatch-signing.key"), nonces
    )
    nonces.close()
