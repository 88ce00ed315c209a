"""Run one child process in its own process group with a deadline and capped output; a timeout or a
cancelled task kills the whole group, so no descendant outlives the call."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from seepient.execution.capped_output import CappedOutput
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
        # ``vars``, not ``dataclasses.asdict``: that deep-copies every value, the larger part of this call.
        return ShellOutcome(**vars(self), sandbox=sandbox)


async def _drain(stream: asyncio.StreamReader | None, sink: CappedOutput) -> None:
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
    capture = stdio == "capture"
    feeds_stdin = capture and stdin is not None
    if not feeds_stdin and _PIDFD_WORKS:
        return await _run_watching_pidfd(
            argv, env=env, cwd=cwd, timeout_s=timeout_s, max_output_bytes=max_output_bytes, capture=capture
        )
    started = time.monotonic()
    process = await start_group_leader(
        argv,
        env=env,
        cwd=cwd,
        stdin=asyncio.subprocess.PIPE if feeds_stdin else asyncio.subprocess.DEVNULL if capture else None,
        capture=capture,
    )
    pgid = process.pid
    stdout = CappedOutput(max_output_bytes)
    stderr = CappedOutput(max_output_bytes)
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
    return _result(process.returncode, stdout, stderr, timed_out=timed_out, started=started)


def _result(
    returncode: int | None, stdout: CappedOutput, stderr: CappedOutput, *, timed_out: bool, started: float
) -> ProcessResult:
    return ProcessResult(
        exit_code=None if timed_out else returncode,
        stdout=stdout.text(),
        stderr=stderr.text(),
        timed_out=timed_out,
        stdout_truncated=stdout.truncated,
        stderr_truncated=stderr.truncated,
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def _pidfd_works() -> bool:
    """Whether this kernel hands out process file descriptors (Linux 5.3 and later)."""
    if not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


_PIDFD_WORKS = _pidfd_works()


class _Watched:
    """One started child's pipes and exit, read by the event loop's own selector.

    Every shell step starts a process, and asyncio's subprocess machinery costs each one a waiter thread
    (the child watcher of Python 3.11), two pipe transports and their protocols; here the loop watches the
    two pipes and a pidfd, which becomes readable when the child exits."""

    def __init__(self, process: subprocess.Popen[bytes], stdout: CappedOutput, stderr: CappedOutput) -> None:
        self._loop = asyncio.get_running_loop()
        self.process = process
        self._pidfd = os.pidfd_open(process.pid)
        self.exited = self._loop.create_future()
        self._loop.add_reader(self._pidfd, self._reap)
        self.pipes_closed = self._loop.create_future()
        self._open: dict[int, CappedOutput] = {}
        for stream, sink in ((process.stdout, stdout), (process.stderr, stderr)):
            if stream is not None:
                fd = stream.fileno()
                os.set_blocking(fd, False)
                self._open[fd] = sink
                self._loop.add_reader(fd, self._read, fd)
        if not self._open:
            self.pipes_closed.set_result(None)

    def _reap(self) -> None:
        self._loop.remove_reader(self._pidfd)
        try:
            _, status = os.waitpid(self.process.pid, 0)
            code = os.waitstatus_to_exitcode(status)
        except ChildProcessError:  # reaped by someone else's handler: the status is lost, as asyncio says
            code = 255
        # Popen must not wait for a child reaped here.
        self.process.returncode = code
        if not self.exited.done():
            self.exited.set_result(None)

    def _read(self, fd: int) -> None:
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self._open[fd].feed(chunk)
            return
        self._close_pipe(fd)

    def _close_pipe(self, fd: int) -> None:
        self._loop.remove_reader(fd)
        del self._open[fd]
        if not self._open and not self.pipes_closed.done():
            self.pipes_closed.set_result(None)

    def close(self) -> None:
        """Stop watching: pipes still open (a descendant that left the group holds them) are given up."""
        for fd in list(self._open):
            self._close_pipe(fd)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        if not self.exited.done():
            self._loop.remove_reader(self._pidfd)
        os.close(self._pidfd)


async def _run_watching_pidfd(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | str | None,
    timeout_s: float | None,
    max_output_bytes: int,
    capture: bool,
) -> ProcessResult:
    """``run_process`` for a child without input on a kernel with pidfds; the same results, deadline and kill."""
    started = time.monotonic()
    pipe = subprocess.PIPE if capture else None
    # As ``start_group_leader``: a new session makes the child the leader of the group one killpg reaches.
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL if capture else None,
        stdout=pipe,
        stderr=pipe,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
    )
    return await watch_to_end(
        process, timeout_s=timeout_s, max_output_bytes=max_output_bytes, started=started
    )


def pidfds_work() -> bool:
    """Whether ``watch_to_end`` can watch a child here (a kernel with process file descriptors)."""
    return _PIDFD_WORKS


async def watch_to_end(
    process: subprocess.Popen[bytes],
    *,
    timeout_s: float | None,
    max_output_bytes: int,
    started: float | None = None,
) -> ProcessResult:
    """Read a started group leader's output until it exits, its deadline (from ``started``, default now) or the
    caller's cancellation; then kill its group, as ``run_process`` does. Needs ``pidfds_work()``."""
    started = time.monotonic() if started is None else started
    stdout = CappedOutput(max_output_bytes)
    stderr = CappedOutput(max_output_bytes)
    try:
        watched = _Watched(process, stdout, stderr)
    except BaseException:
        _kill_group(process.pid)
        process.wait()
        raise
    timed_out = False
    try:
        async with asyncio.timeout(timeout_s):
            await watched.pipes_closed
            await watched.exited
    except TimeoutError:
        timed_out = True
    finally:
        # Runs on success too: background children left in the group must not outlive the command.
        _kill_group(process.pid)
        try:
            if not watched.exited.done():
                await asyncio.shield(watched.exited)
            if not watched.pipes_closed.done():
                with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(watched.pipes_closed), _DRAIN_AFTER_KILL_S)
        finally:
            watched.close()
    return _result(process.returncode, stdout, stderr, timed_out=timed_out, started=started)
