"""A run forked by the warm process takes on its caller: standard streams, working directory, umask, limits,
environment, time zone and argv, then runs the command as the console script would and leaves with its
status. It never returns into the warm process's loop."""

from __future__ import annotations

import io
import os
import signal
import sys
import time
import traceback
from collections.abc import Mapping
from typing import Any, NoReturn

_PR_SET_PDEATHSIG = 1
_FAILED = 70
# The warm process's own stream objects own descriptors 0-2; were they collected, they would close the caller's.
_REPLACED_STREAMS: list[object] = []


def become(request: Mapping[str, Any], descriptors: list[int], keeper: int) -> NoReturn:
    try:
        _die_with(keeper)
        for target, fd in zip((0, 1, 2), descriptors[:3], strict=True):
            os.dup2(fd, target)
        os.fchdir(descriptors[3])
        for fd in descriptors:
            os.close(fd)
        os.umask(request["umask"])
        _take_limits(request["limits"])
        os.environ.clear()
        os.environ.update(request["environ"])
        time.tzset()
        sys.argv = list(request["argv"])
        _reopen_standard_streams()
        from seepient.surfaces.cli.entry import run_command

        run_command()
    except KeyboardInterrupt:
        traceback.print_exc()
        _die_by(signal.SIGINT)
    except BaseException:
        try:
            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(_FAILED)
    os._exit(_FAILED)


def _die_by(number: signal.Signals) -> NoReturn:
    """An uncaught Ctrl+C ends a Python process by SIGINT itself, so its parent sees a run that was interrupted."""
    sys.stderr.flush()
    signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)
    os._exit(128 + number)


def _die_with(keeper: int) -> None:
    """The run is killed when its keeper dies (the keeper kills it when the caller goes away): the same end as
    a cold run's process, whose jailed children die with it."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    # The keeper may have died before the request above took effect.
    if os.getppid() != keeper:
        os._exit(_FAILED)


def _take_limits(limits: Mapping[str, list[int]]) -> None:
    import resource

    for name, (soft, hard) in limits.items():
        resource.setrlimit(getattr(resource, name), (soft, hard))


def _reopen_standard_streams() -> None:
    """Text streams over the caller's descriptors, made as the interpreter makes them at start (the encoding is
    the warm process's, which started under the caller's startup variables: they are in its name)."""
    _REPLACED_STREAMS.extend(
        (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__)
    )
    encoding = sys.__stdout__.encoding if sys.__stdout__ is not None else "utf-8"
    errors = sys.__stdout__.errors if sys.__stdout__ is not None else "strict"
    # ``-u`` and PYTHONUNBUFFERED leave no flag; the warm process's own output stream shows them.
    unbuffered = bool(getattr(sys.__stdout__, "write_through", False))
    sys.stdin = sys.__stdin__ = _text(0, "r", encoding, errors, line_buffering=False, write_through=False)
    tty = os.isatty(1)
    sys.stdout = sys.__stdout__ = _text(1, "w", encoding, errors, tty and not unbuffered, unbuffered)
    sys.stderr = sys.__stderr__ = _text(2, "w", encoding, "backslashreplace", not unbuffered, unbuffered)


def _text(
    fd: int, mode: str, encoding: str, errors: str, line_buffering: bool, write_through: bool
) -> io.TextIOWrapper:
    raw = io.FileIO(fd, mode, closefd=False)
    buffered: io.BufferedIOBase = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    return io.TextIOWrapper(
        buffered,
        encoding=encoding,
        errors=errors,
        newline="\n",
        line_buffering=line_buffering,
        write_through=write_through,
    )
