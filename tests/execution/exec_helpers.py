"""Helpers for the execution tests: find processes on the host by their exact argv and wait for them to die."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

SSH_MARKER = "PRIVATE-KEY-MARKER-7f3a9c"
SECRET_ENV = {
    "OPENAI_API_KEY": "sk-test-openai-4c1d",
    "GITHUB_TOKEN": "ghp_test_token_9b2e",
    "MY_SECRET": "my-secret-value-55aa",
    "DB_PASSWORD": "db-password-value-77cc",
    "SEEPIENT_X": "seepient-internal-value-31ff",
}


def unique_sleep_seconds() -> str:
    """A sleep duration no other process on the machine uses, so its argv identifies it in /proc."""
    return f"3600.{secrets.randbelow(10**6):06d}"


def _alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return fields[0] not in ("Z", "X")


def pids_with_argv(*argv: str) -> list[int]:
    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if Path(f"/proc/{entry}/cmdline").read_bytes() == wanted and _alive(int(entry)):
                found.append(int(entry))
        except OSError:
            continue
    return found


def wait_for_pids(*argv: str, deadline_s: float = 15.0) -> list[int]:
    """Poll until a process with this argv exists on the host; fail if it never appears."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        found = pids_with_argv(*argv)
        if found:
            return found
        time.sleep(0.01)
    raise AssertionError(f"no process {argv} appeared")


def wait_until_gone(pids: list[int], deadline_s: float = 15.0) -> list[int]:
    """The pids still alive once the deadline passes (or as soon as none is)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        alive = [pid for pid in pids if _alive(pid)]
        if not alive:
            return []
        time.sleep(0.01)
    return [pid for pid in pids if _alive(pid)]
