"""Fixtures for end-to-end tests: a fake home with secrets to steal, an isolated SEEPIENT_HOME, and a
runner for the real ``seepient`` console script."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.audit_view import merge_actions
from tests.conftest import BIN
from tests.support.scripts import write_script

SECRET_MARKER = "SEEPIENT-TEST-SECRET-7f3a9c"


@dataclass
class Sandboxed:
    home: Path
    seepient_home: Path
    workspace: Path
    outside: Path
    env: dict[str, str]

    def script(self, turns: list[dict[str, Any]], name: str = "script.yaml") -> Path:
        return write_script(self.home / name, turns)

    def audit_lines(self) -> list[dict[str, Any]]:
        """The log's records as written (an action that ran is an intent and an outcome)."""
        log = self.seepient_home / "audit.log"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]

    def audit_records(self) -> list[dict[str, Any]]:
        """One entry per action (intent and outcome merged, see ``tests/audit_view.py``)."""
        return merge_actions(self.audit_lines())


@pytest.fixture
def world(tmp_path: Path) -> Sandboxed:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN KEY----- {SECRET_MARKER}\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"aws_secret_access_key={SECRET_MARKER}\n")
    seepient_home = tmp_path / "seepient-home"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "SEEPIENT_HOME": str(seepient_home),
        "LANG": "C.UTF-8",
        "OPENAI_API_KEY": f"sk-{SECRET_MARKER}",
        "GITHUB_TOKEN": SECRET_MARKER,
        "DB_PASSWORD": SECRET_MARKER,
        "MY_SECRET_THING": SECRET_MARKER,
        # A TUI a test opens on a terminal would leave a warm process behind; test_warm_start asks for one.
        "SEEPIENT_WARM_START": "0",
    }
    return Sandboxed(home=home, seepient_home=seepient_home, workspace=workspace, outside=outside, env=env)


RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def seepient(world: Sandboxed) -> RunCli:
    def run(
        *args: str, input: str | None = None, timeout: float = 120, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "seepient"), *args],
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env or world.env,
            cwd=world.workspace,
        )

    return run


def json_events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
