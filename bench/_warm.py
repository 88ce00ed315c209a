"""The warm process as the benchmarks see it, through its log in ``<SEEPIENT_HOME>/run/``: its pid once it
listens, and how many starts it has served (so a figure said to be warm is known to be)."""

from __future__ import annotations

import re
import time
from pathlib import Path


def _log(folder: Path) -> str:
    return "".join(log.read_text() for log in folder.glob("*.log")) if folder.exists() else ""


def listening_pid(folder: Path) -> int:
    """The pid of the warm process in ``folder``, waiting (up to a minute) until it listens."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.findall(r"listening, pid (\d+)", _log(folder))
        if found and list(folder.glob("*.sock")):
            return int(found[-1])
        time.sleep(0.05)
    raise SystemExit(f"the warm process did not start: {_log(folder)}")


def served_starts(folder: Path) -> int:
    return _log(folder).count("served pid")
