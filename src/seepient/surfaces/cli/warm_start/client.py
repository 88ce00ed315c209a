"""The console script's side of a warm start: hand this process's terminal, directory, environment and limits to
the warm process, pass on the signals this process gets, and end as the run ended. The run starts only when
this side says so: until then any failure, or a warm process too slow to answer, means the command runs
here, cold, and after it never a second time."""

from __future__ import annotations

import os
import resource
import signal
import socket
import sys

from seepient.surfaces.cli.warm_start import place
from seepient.surfaces.cli.warm_start.wire import FORWARDED_SIGNALS, WireError, receive_frame, send_frame

TYPE_CHECKING = False  # not ``typing``'s, which the client does not otherwise load
if TYPE_CHECKING:
    from collections.abc import Mapping

_HANDSHAKE_SECONDS = 5
LIMITS = ("RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE", "RLIMIT_NOFILE")
LIMITS += ("RLIMIT_NPROC", "RLIMIT_STACK", "RLIMIT_MEMLOCK")


def run_in_warm_process(environ: Mapping[str, str] = os.environ) -> int | None:
    """This command's exit status, run by the warm process; ``None`` when none served it (none is running, it
    refused, or this process cannot hand itself over), and the caller runs the command itself."""
    if not place.chosen(environ):
        return None
    folder = place.private_folder(environ, create=False)
    if folder is None:
        return None
    path = place.socket_path(folder, place.server_key(environ))
    descriptors = _handed_descriptors()
    if path is None or descriptors is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        try:
            # A warm process stopped or swamped must not hold the command up: past this, it runs here.
            sock.settimeout(_HANDSHAKE_SECONDS)
            sock.connect(os.fsencode(path))
            # Descriptors are sent only to a process that answered: in flight to one that is stopped, they would
            # keep this process's output open after it ended (a pipeline's reader would wait for it).
            hello, _ = receive_frame(sock)
            if "hello" not in hello:
                return None
            send_frame(sock, _request(environ), descriptors)
            reply, _ = receive_frame(sock)
            if "ready" not in reply:
                return None
            send_frame(sock, {"go": True})
        except (OSError, WireError, EOFError, ValueError):
            # Closing without "go" (or with it unsent) leaves the keeper to end without forking the run.
            return None
        finally:
            for fd in descriptors[3:]:
                os.close(fd)
        # From here the run is under way: whatever happens, it must not run a second time here.
        sock.settimeout(None)
        return _follow(sock)
    finally:
        sock.close()


def start_warm_process(environ: Mapping[str, str] = os.environ) -> None:
    """After a cold run: start the warm process for the next one, on a terminal or when asked for; it takes its
    lock before it loads anything, so a second one started meanwhile leaves at once."""
    if not place.chosen(environ):
        return
    if environ.get(place.SWITCH_VARIABLE) != "1" and not (sys.stdin.isatty() or sys.stderr.isatty()):
        return
    folder = place.private_folder(environ, create=True)
    if folder is None:
        return
    key = place.server_key(environ)
    if place.socket_path(folder, key) is None:
        return
    import subprocess

    server_environ = place.startup_environment(environ)
    for name in ("SEEPIENT_HOME", "HOME", place.IDLE_VARIABLE, place.SWITCH_VARIABLE):
        if name in environ:
            server_environ[name] = environ[name]
    log = os.open(
        os.path.join(folder, f"{key}.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600
    )
    try:
        subprocess.Popen(
            [sys.executable, "-P", "-m", "seepient.surfaces.cli.warm_start.server", key],
            env=server_environ,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    except OSError:
        pass
    finally:
        os.close(log)


def _handed_descriptors() -> list[int] | None:
    """Standard input, output and error, and the working directory; ``None`` if one is closed or the working
    directory is gone (the run starts here and says so as it would)."""
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
        return [0, 1, 2, os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
    except OSError:
        return None


def _request(environ: Mapping[str, str]) -> dict[str, object]:
    umask = os.umask(0o022)
    os.umask(umask)
    limits = {name: resource.getrlimit(getattr(resource, name)) for name in LIMITS if hasattr(resource, name)}
    return {"argv": sys.argv, "environ": dict(environ), "umask": umask, "limits": limits}


def _follow(sock: socket.socket) -> int:
    """Pass signals on until the run's status arrives, each to reach the run as it would reach a cold one
    (SIGTSTP stops the run and then this process, a job's stop as the shell sees it; SIGCONT goes on with
    both). A run killed by a signal ends this process by the same signal, so a shell or supervisor sees what it
    would have seen."""

    def forward(number: int, _frame: object) -> None:
        try:
            send_frame(sock, {"signal": number})
        except OSError:
            return
        if number == signal.SIGTSTP:
            os.kill(os.getpid(), signal.SIGSTOP)

    for number in FORWARDED_SIGNALS:
        signal.signal(number, forward)
    try:
        while True:
            try:
                message, _ = receive_frame(sock)
            except (EOFError, WireError, OSError, ValueError):
                sys.stderr.write("seepient: the warm process serving this run went away before it ended\n")
                return 1
            if "started" in message:
                continue
            if "exit" in message:
                return int(message["exit"])
            if "killed" in message:
                number = int(message["killed"])
                _default_dispositions()
                os.kill(os.getpid(), number)
                return 128 + number
    finally:
        _default_dispositions()


def _default_dispositions() -> None:
    for number in FORWARDED_SIGNALS:
        signal.signal(number, signal.SIG_DFL)
