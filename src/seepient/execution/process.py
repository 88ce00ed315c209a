"""Run one child process in its own process group with a deadline and capped output; a timeout or a
cancelled task kills the whole group, so no descendant outlives the call."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from seepient.protocol.outcomes import ShellOutcome

# Reading continues in chunks of this size past the cap, so a chatty child never blocks on a full pipe.
_CHUNK = 64 * 1024
# How long to keep draining pipes after the group was killed: a descendant that escaped the group (setsid)
# may still hold them open, and the caller must not wait for it.
_DRAIN_AFTER_KILL_S = 0.5


@dataclass(frozen=True)
class ProcessResult:
    """``exit_code`` is None when the process was killed for its deadline; negative for another signal."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: int

    def shell_outcome(self, sandbox: str) -> ShellOutcome:
        """This result as the executor interface reports a command, ``sandbox`` naming where it ran."""
        return ShellOutcome(
            exit_code=self.exit_code,
            stdout=self.stdout,
            stderr=self.stderr,
            timed_out=self.timed_out,
            stdout_truncated=self.stdout_truncated,
            stderr_truncated=self.stderr_truncated,
            duration_ms=self.duration_ms,
            sandbox=sandbox,
        )


class _CappedBuffer:
    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._data = bytearray()
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        room = self._cap - len(self._data)
        if len(chunk) > room:
            self.truncated = True
            chunk = chunk[: max(room, 0)]
        self._data += chunk

    def text(self) -> str:
        return self._data.decode("utf-8", errors="replace")


async def _drain(stream: asyncio.StreamReader | None, sink: _CappedBuffer) -> None:
    if stream is None:
        return
    while chunk := await stream.read(_CHUNK):
        sink.feed(chunk)


async def _feed(stream: asyncio.StreamWriter | None, data: bytes) -> None:
    if stream is None:
        return
    # A child that exits without reading its input is not an error of the run.
    with contextlib.suppress(OSError):
        stream.write(data)
        await stream.drain()
    with contextlib.suppress(OSError):
        stream.close()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def start_group_leader(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | str | None,
    stdin: int | None = asyncio.subprocess.DEVNULL,
    capture: bool = True,
) -> asyncio.subprocess.Process:
    """Start ``argv`` with stdout and stderr piped (``capture``) or inherited.

    A new session makes the child the leader of its own process group, so one killpg reaches every descendant
    that did not leave the group on purpose, and a terminal's Ctrl-C aimed at Seepient does not reach it."""
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE if capture else None,
        stderr=asyncio.subprocess.PIPE if capture else None,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
    )


async def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | str | None = None,
    timeout_s: float | None = None,
    max_output_bytes: int = 1_000_000,
    stdio: Literal["capture", "inherit"] = "capture",
    stdin: bytes | None = None,
) -> ProcessResult:
    """Run ``argv`` to completion, its deadline or the caller's cancellation, whichever comes first.

    With ``stdio="capture"`` stdin is ``stdin`` (empty when None) and stdout/stderr are collected up to
    ``max_output_bytes`` each; with ``"inherit"`` the child uses this process's standard streams and nothing
    is captured.
    """
    started = time.monotonic()
    capture = stdio == "capture"
    feeds_stdin = capture and stdin is not None
    process = await start_group_leader(
        argv,
        env=env,
        cwd=cwd,
        stdin=asyncio.subprocess.PIPE if feeds_stdin else asyncio.subprocess.DEVNULL if capture else None,
        capture=capture,
    )
    pgid = process.pid
    stdout = _CappedBuffer(max_output_bytes)
    stderr = _CappedBuffer(max_output_bytes)
    readers = asyncio.gather(
        _feed(process.stdin, stdin or b""), _drain(process.stdout, stdout), _drain(process.stderr, stderr)
    )
    timed_out = False
    try:
        async with asyncio.timeout(timeout_s):
            await readers
            await process.wait()
    except TimeoutError:
        timed_out = True
    finally:
        # Runs on success too: background children left in the group must not outlive the command.
        _kill_group(pgid)
        if process.returncode is None:
            await asyncio.shield(process.wait())
        if not readers.done():
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(readers), _DRAIN_AFTER_KILL_S)
            readers.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await readers
    return ProcessResult(
        exit_code=None if timed_out else process.returncode,
        stdout=stdout.text(),
        stderr=stderr.text(),
        timed_out=timed_out,
        stdout_truncated=stdout.truncated,
        stderr_truncated=stderr.truncated,
        duration_ms=int((time.monotonic() - started) * 1000),
    )
