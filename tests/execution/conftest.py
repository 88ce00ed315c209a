"""Fixtures for the execution tests: a workspace, a fake home with planted secrets outside /tmp (so the
sandbox's private /tmp cannot hide them by accident), and a LocalExecutor whose parent environment holds secrets."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from seepient.execution.local import LocalExecutor
from tests.execution.exec_helpers import SECRET_ENV, SSH_MARKER


@pytest.fixture
def outside_dir() -> Iterator[Path]:
    """A scratch directory on the host's real file system, outside /tmp and outside any workspace."""
    path = Path(tempfile.mkdtemp(prefix="seepient-exec-test-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fake_home(outside_dir: Path) -> Path:
    home = outside_dir / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN KEY-----\n{SSH_MARKER}\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"aws_secret_access_key={SSH_MARKER}\n")
    (home / ".netrc").write_text(f"machine example.com password {SSH_MARKER}\n")
    (home / ".seepient").mkdir()
    (home / ".seepient" / "audit.log").write_text(f"{SSH_MARKER}\n")
    (home / "notes.txt").write_text("ordinary file\n")
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def parent_environ(fake_home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(fake_home),
        "LANG": "C.UTF-8",
        **SECRET_ENV,
    }


@pytest.fixture
def make_executor(
    workspace: Path, fake_home: Path, parent_environ: dict[str, str]
) -> Callable[..., LocalExecutor]:
    """A LocalExecutor on the workspace with the fake home and the secret-holding environment; keyword
    arguments are the test's own options (sandbox, limits, a background manager...)."""

    def make(**options: Any) -> LocalExecutor:
        return LocalExecutor(
            workspace,
            seepient_home=fake_home / ".seepient",
            home=fake_home,
            environ=parent_environ,
            **options,
        )

    return make


@pytest.fixture
def executor(make_executor: Callable[..., LocalExecutor]) -> LocalExecutor:
    return make_executor(max_output_bytes=100_000)
