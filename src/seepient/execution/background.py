"""Background processes of one session: started (already sandboxed) argv that keep running after the tool call
returns, with their output in bounded ring buffers, read incrementally, killed as a whole process group, and
all killed when the session closes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from seepient.execution.process import start_group_leader
from seepient.protocol.actions import new_id
from seepient.protocol.outcomes import BackgroundOutput
from seepient.protocol.refusals import BackgroundRefused

_CHUNK = 64 * 1024
# How long a kill waits for the process and its pipes before answering anyway: a descendant that left the
# group may hold a pipe open, and the caller must not wait for it.
_SETTLE_AFTER_KILL_S = 2.0
EndedBy = Literal["kill", "timeout", "session_end"]


class _RingBuffer:
    """Keeps the last ``cap`` bytes written and remembers how far the reader got, so a read can say exactly
    how many bytes it can no longer show."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._data = bytearray()
        self.written = 0
        self._read = 0

    def feed(self, chunk: bytes) -> None:
        self._data += chunk
        self.written += len(chunk)
        excess = len(self._data) - self._cap
        if excess > 0:
            del self._data[:excess]

    def take(self, limit: int, *, final: bool) -> tuple[str, int]:
        """Unread text (at most ``limit`` bytes, the newest) and how many unread bytes were dropped."""
        kept_from = self.written - len(self._data)
        start = max(self._read, kept_from)
        dropped = start - self._read
        data = bytes(self._data[start - kept_from :])
        if not final:
            # A multi-byte character cut by the pipe waits for its last bytes instead of decoding to U+FFFD.
            data = data[: _complete_utf8_length(data)]
        self._read = start + len(data)
        if len(data) > limit:
            dropped += len(data) - limit
            data = data[-limit:]
        return data.decode("utf-8", errors="replace"), dropped


def _complete_utf8_length(data: bytes) -> int:
    """Length of ``data`` without a trailing, incomplete UTF-8 sequence."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for the lead byte
        if byte & 0x80 == 0:
            return len(data)
        needed = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4
        return len(data) if back >= needed else len(data) - back
    return len(data)


@dataclass
class _Entry:
    process_id: str
    session_id: str
    command: str
    process: asyncio.subprocess.Process
    stdout: _RingBuffer
    stderr: _RingBuffer
    started: float
    cleanup: contextlib.AsyncExitStack
    watcher: asyncio.Task[None] | None = None
    ended_by: EndedBy | None = None
    ended_at: float | None = None
    requested_end: EndedBy | None = field(default=None)

    @property
    def running(self) -> bool:
        return self.ended_at is None


def _holds_a_slot(entry: _Entry) -> bool:
    """Whether a process counts against the limit: until it has exited, not until its pipes are drained (which
    may take up to ``_SETTLE_AFTER_KILL_S`` more), so a process just killed frees its place at once."""
    return entry.running and entry.process.returncode is None


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class BackgroundProcesses:
    """The background processes one executor started. ``max_running`` bounds how many run at once,
    ``buffer_bytes`` how much of each stream is kept, ``read_bytes`` how much one read returns per stream;
    ``max_finished`` how many ended processes stay readable."""

    def __init__(
        self,
        *,
        max_running: int = 4,
        buffer_bytes: int = 256 * 1024,
        read_bytes: int = 30_000,
        max_finished: int = 32,
    ) -> None:
        self.max_running = max_running
        self.buffer_bytes = buffer_bytes
        self.read_bytes = read_bytes
        self.max_finished = max_finished
        self._entries: dict[str, _Entry] = {}
        self._closed = False

    def running_count(self) -> int:
        return sum(1 for entry in self._entries.values() if _holds_a_slot(entry))

    async def start(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        session_id: str,
        command: str,
        cwd: Path | None = None,
        lifetime_s: float | None = None,
        cleanup: contextlib.AsyncExitStack | None = None,
    ) -> str:
        """Start ``argv`` (already wrapped in the sandbox) and return its ``bg_…`` id. ``cleanup`` is closed
        when the process ends (the egress proxy it uses). Raises ``BackgroundRefused`` at the limit."""
        cleanup = cleanup or contextlib.AsyncExitStack()
        if self._closed:
            await cleanup.aclose()
            raise BackgroundRefused("the session is closing; no new background process can start")
        if self.running_count() >= self.max_running:
            await cleanup.aclose()
            running = ", ".join(e.process_id for e in self._entries.values() if _holds_a_slot(e))
            plural = "es" if self.max_running != 1 else ""
            raise BackgroundRefused(
                f"the limit of {self.max_running} background process{plural} is reached ({running} running); "
                "stop one with shell_kill, or wait for one to finish, before starting another"
            )
        try:
            process = await start_group_leader(argv, env=env, cwd=cwd)
        except BaseException:
            await cleanup.aclose()
            raise
        entry = _Entry(
            process_id=new_id("bg"),
            session_id=session_id,
            command=command,
            process=process,
            stdout=_RingBuffer(self.buffer_bytes),
            stderr=_RingBuffer(self.buffer_bytes),
            started=time.monotonic(),
            cleanup=cleanup,
        )
        entry.watcher = asyncio.create_task(self._watch(entry, lifetime_s))
        self._entries[entry.process_id] = entry
        self._forget_old()
        return entry.process_id

    async def _watch(self, entry: _Entry, lifetime_s: float | None) -> None:
        process = entry.process
        readers = asyncio.gather(
            self._drain(process.stdout, entry.stdout), self._drain(process.stderr, entry.stderr)
        )
        try:
            async with asyncio.timeout(lifetime_s):
                await process.wait()
        except TimeoutError:
            entry.requested_end = entry.requested_end or "timeout"
        finally:
            # Also after a normal exit: a child it left in the group must not outlive it.
            _kill_group(process.pid)
            if process.returncode is None:
                await asyncio.shield(process.wait())
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(readers), _SETTLE_AFTER_KILL_S)
            readers.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await readers
            entry.ended_by = entry.requested_end
            entry.ended_at = time.monotonic()
            with contextlib.suppress(Exception):
                await entry.cleanup.aclose()

    @staticmethod
    async def _drain(stream: asyncio.StreamReader | None, sink: _RingBuffer) -> None:
        if stream is None:
            return
        while chunk := await stream.read(_CHUNK):
            sink.feed(chunk)

    def _owned(self, process_id: str, session_id: str) -> _Entry:
        entry = self._entries.get(process_id)
        if entry is None or entry.session_id != session_id:
            # Another session's id is answered exactly like a made-up one: its existence is not revealed.
            known = ", ".join(e.process_id for e in self._entries.values() if e.session_id == session_id)
            raise BackgroundRefused(
                f"no background process {process_id!r} was started by this session"
                + (f" (its processes: {known})" if known else " (it has started none)")
                + "; use the id that shell returned when it started the command (bg_…)"
            )
        return entry

    def output(self, process_id: str, *, session_id: str) -> BackgroundOutput:
        """What the process wrote since the last read, and whether it still runs."""
        return self._snapshot(self._owned(process_id, session_id))

    async def kill(self, process_id: str, *, session_id: str) -> BackgroundOutput:
        """Kill the process's whole group and return its last output; a process that already ended is
        reported as it is."""
        entry = self._owned(process_id, session_id)
        await self._end(entry, "kill")
        return self._snapshot(entry)

    async def _end(self, entry: _Entry, reason: EndedBy) -> None:
        if entry.running:
            entry.requested_end = entry.requested_end or reason
            _kill_group(entry.process.pid)
        if entry.watcher is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(entry.watcher), _SETTLE_AFTER_KILL_S * 2)

    def _snapshot(self, entry: _Entry) -> BackgroundOutput:
        final = not entry.running
        stdout, stdout_dropped = entry.stdout.take(self.read_bytes, final=final)
        stderr, stderr_dropped = entry.stderr.take(self.read_bytes, final=final)
        end = entry.ended_at if entry.ended_at is not None else time.monotonic()
        return BackgroundOutput(
            process_id=entry.process_id,
            command=entry.command,
            running=entry.running,
            exit_code=None if entry.running else entry.process.returncode,
            ended_by=entry.ended_by,
            stdout=stdout,
            stderr=stderr,
            stdout_dropped=stdout_dropped,
            stderr_dropped=stderr_dropped,
            runtime_ms=int((end - entry.started) * 1000),
        )

    def _forget_old(self) -> None:
        finished = [e for e in self._entries.values() if not e.running]
        for entry in finished[: max(0, len(finished) - self.max_finished)]:
            del self._entries[entry.process_id]

    async def aclose(self) -> None:
        """Kill every process still running (the session ends) and wait for them to be gone."""
        self._closed = True
        await asyncio.gather(
            *(self._end(entry, "session_end") for entry in list(self._entries.values())),
            return_exceptions=True,
        )
