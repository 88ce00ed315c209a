"""Whether a process still lives, for tests that watch what a kill or an exit left behind."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """A zombie still answers signal 0; it is gone in every way that matters to a test."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
