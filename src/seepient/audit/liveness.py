"""Who wrote an intent, and whether that process still runs: an intent without an outcome is interrupted only
once its writer is gone (a live session's action is merely in progress)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from seepient.audit.record import Writer

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
_cached: tuple[int, Writer] | None = None


def current_writer() -> Writer:
    """This process, as an intent names it (worked out once per process; a forked child works it out anew)."""
    global _cached
    pid = os.getpid()
    if _cached is not None and _cached[0] == pid:
        return _cached[1]
    writer = Writer(host=socket.gethostname(), pid=pid, boot_id=_boot_id(), started=_start_ticks(pid))
    _cached = (pid, writer)
    return writer


def writer_alive(writer: Writer) -> bool | None:
    """True while the writer runs, False once it is gone, None when this machine cannot tell (another host)."""
    if writer.host != socket.gethostname():
        return None
    boot = _boot_id()
    if writer.boot_id is not None and boot is not None and writer.boot_id != boot:
        return False
    try:
        os.kill(writer.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    if writer.started is not None:
        started = _start_ticks(writer.pid)
        if started is not None and started != writer.started:
            return False  # the pid was reused by a later process
    return True


def _boot_id() -> str | None:
    try:
        return _BOOT_ID.read_text().strip() or None
    except OSError:
        return None


def _start_ticks(pid: int) -> int | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces or parentheses: the fields
    # after the last ')' are plain numbers, and the start time is field 22 overall.
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None
