"""The warm process: load what a ``seepient run`` loads, then, for each caller the kernel says is this process's
equal (same user, namespaces, credentials, confinement), fork a keeper that takes the caller's request, forks
the run (``runner``), passes the caller's signals to it and reports how it ended. It holds no secret (it is started with the interpreter's
startup variables alone), runs nothing of a caller's itself, and leaves when idle or when its socket is gone.

``python -P -m seepient.surfaces.cli.warm_start.server KEY``, started by ``client.start_warm_process``.
"""

from __future__ import annotations

import fcntl
import gc
import importlib
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any, NoReturn

from seepient.surfaces.cli.command_words import names_no_command
from seepient.surfaces.cli.warm_start import place
from seepient.surfaces.cli.warm_start.client import LIMITS
from seepient.surfaces.cli.warm_start.wire import (
    FORWARDED_SIGNALS,
    WireError,
    close_descriptors,
    receive_frame,
    send_frame,
)

# What ``seepient run`` and the TUI load on their way, beyond the application itself: every wire format (a run may talk to
# any provider), the runtime, tools, policy, execution, audit and the session store's recorder, and the libraries
# they load on first use. Importing is all that happens here: nothing is read from a caller's environment, home
# or workspace until a run does it for itself (a test holds the preload to that).
PRELOAD = (
    "seepient.surfaces.cli.app",
    "seepient.surfaces.cli.entry",
    "seepient.surfaces.cli.headless",
    "seepient.surfaces.cli.run_sessions",
    "seepient.surfaces.cli.render",
    "seepient.surfaces.stored_sessions",
    "seepient.runtime",
    "seepient.runtime.session",
    "seepient.runtime.assembly",
    "seepient.models.openai_chat",
    "seepient.models.openai_responses",
    "seepient.models.anthropic",
    "seepient.models.gemini",
    "seepient.models.router",
    "seepient.tools.builtin",
    "seepient.tools.registry",
    "seepient.policy.engine",
    "seepient.execution.handlers",
    "seepient.execution.jailed_commands",
    "seepient.execution.sandbox.bwrap",
    "seepient.audit.log",
    "seepient.audit.recovery",
    "seepient.crypto.signing",
    "seepient.crypto.ed25519_pem",
    "seepient.crypto.files",
    "cryptography.hazmat.primitives.serialization",
    "cryptography.hazmat.primitives.asymmetric.ed25519",
    "seepient.models._direct_transport",
    "seepient.store.session_writes",
    "seepient.telemetry.setup",
    "seepient.surfaces.cli.completion_cmd",
    "seepient.surfaces.images",
    "seepient.approval.terminal",
    "httpx2",
    "httpcore2",
    "h11",
    "anyio._backends._asyncio",
    "anyio.streams.tls",
    "truststore",
    "typer._adapters",
    "concurrent.futures.thread",
    "ctypes",
    "sqlite3",
    "tree_sitter_bash",
    "yaml",
    # The TUI (``seepient`` on a terminal, no command): its screens, the session store it lists and continues
    # sessions from, textual's terminal driver and layouts.
    "seepient.surfaces.tui.app",
    "seepient.surfaces.tui.entry",
    "seepient.surfaces.tui.approval",
    "seepient.surfaces.tui.palette",
    "seepient.surfaces.tui.reports",
    "seepient.surfaces.tui.sessions",
    "seepient.surfaces.tui.trust",
    "seepient.surfaces.tui.yes_no",
    "seepient.store.repository",
    "seepient.models.scripted",
    "seepient.config.project_effect",
    "seepient.runtime.custom_commands",
    "sqlalchemy.dialects.sqlite.aiosqlite",
    "textual.drivers.linux_driver",
    "textual._xterm_parser",
    "textual.layouts.factory",
    "textual.layouts.horizontal",
    "textual.layouts.stream",
    "textual.scrollbar",
    "tty",
)
_DEFAULT_IDLE_SECONDS = 900
_PEERCRED = struct.Struct("3i")
# SO_PEERPIDFD (Linux 6.5): a pidfd of the process that connected, taken by the kernel at connect(), so the
# identity read through /proc cannot be another process's that took over a recycled pid.
_SO_PEERPIDFD = 77
_KEEPER_FAILED = 70


def main(argv: list[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) != 1:
        raise SystemExit("usage: python -P -m seepient.surfaces.cli.warm_start.server KEY")
    key = arguments[0]
    folder = place.private_folder(os.environ, create=True)
    path = None if folder is None else place.socket_path(folder, key)
    if folder is None or path is None:
        _log("no private folder for the socket; not serving")
        return
    if place.server_key(os.environ) != key:
        _log("this process is not the one asked for (the code or the caller changed); not serving")
        return
    lock = os.open(os.path.join(folder, f"{key}.lock"), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return  # another one serves, or is starting to
    _preload()
    if threading.active_count() != 1:
        # A fork keeps only the forking thread; a lock another one held would stay locked in every run.
        _log(f"{threading.active_count()} threads after loading; a fork would not be safe; not serving")
        return
    gc.collect()
    gc.freeze()
    listener = _listen(path)
    inode = os.stat(path).st_ino
    _log(f"listening, pid {os.getpid()}")
    try:
        _serve(listener, path, inode, _idle_seconds(os.environ), lock)
    finally:
        listener.close()
        if _still_ours(path, inode):
            os.unlink(path)


def _preload() -> None:
    from seepient._asyncio_only import keep_trio_out_of_httpcore

    # As the console script does before it loads the HTTP stack (``entry.run_command``).
    keep_trio_out_of_httpcore()
    for name in PRELOAD:
        importlib.import_module(name)
    from seepient.protocol.frozen import build_deferred_models

    build_deferred_models()


def _listen(path: str) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    # The lock is held, so a socket file here is a dead server's.
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    previous = os.umask(0o177)
    try:
        listener.bind(os.fsencode(path))
    finally:
        os.umask(previous)
    listener.listen(32)
    return listener


def _serve(listener: socket.socket, path: str, inode: int, idle: float, lock: int) -> None:
    last = time.monotonic()
    keepers: set[int] = set()
    while True:
        ready, _, _ = select.select([listener], [], [], 1.0)
        _reap(keepers)
        if not _still_ours(path, inode):
            _log("the socket was removed or replaced; leaving")
            return
        if not ready:
            if time.monotonic() - last > idle:
                _log("idle; leaving")
                return
            continue
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        last = time.monotonic()
        try:
            keeper = _serve_one(conn, listener, lock)
            if keeper is not None:
                keepers.add(keeper)
        except OSError as error:
            _log(f"a caller was not served: {error}")
        finally:
            conn.close()


def _serve_one(conn: socket.socket, listener: socket.socket, lock: int) -> int | None:
    """Check the caller and fork its keeper; the keeper takes the request. This process never holds a caller's
    environment or descriptors, and a slow caller holds up only its own keeper."""
    conn.settimeout(5)
    pid, uid, _ = _PEERCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
    refusal = _refusal(conn, pid, uid)
    if refusal is not None:
        _log(f"refused pid {pid}: {refusal}")
        send_frame(conn, {"refused": refusal})
        return None
    keeper = os.fork()
    if keeper == 0:
        try:
            listener.close()
            os.close(lock)
            _keep(conn)
        finally:
            os._exit(_KEEPER_FAILED)
    _log(f"served pid {pid}, keeper {keeper}")
    return keeper


def _refusal(conn: socket.socket, pid: int, uid: int) -> str | None:
    """Why this caller is not served, or ``None``. Its user comes from the kernel (SO_PEERCRED); the rest of
    what it is from /proc, read while a pidfd pins the process, where the kernel has SO_PEERPIDFD."""
    if uid != os.geteuid():
        return "another user"
    pinned = _peer_pidfd(conn)
    try:
        if place.process_identity(pid) != place.process_identity():
            return "a caller in another namespace, cgroup or confinement, or with other credentials"
        if pinned is not None and _pidfd_pid(pinned) != pid:
            return "the caller went away"
    except OSError:
        return "the caller could not be inspected"
    finally:
        if pinned is not None:
            os.close(pinned)
    return None


def _peer_pidfd(conn: socket.socket) -> int | None:
    try:
        return struct.unpack("i", conn.getsockopt(socket.SOL_SOCKET, _SO_PEERPIDFD, 4))[0]
    except OSError:
        # An older kernel: the identity is read by pid alone (see docs/security.md for what that leaves).
        return None


def _pidfd_pid(pidfd: int) -> int | None:
    with open(f"/proc/self/fdinfo/{pidfd}", encoding="ascii") as info:
        for line in info:
            if line.startswith("Pid:"):
                return int(line.split()[1])
    return None


def _request_refusal(request: Mapping[str, Any], descriptors: list[int]) -> str | None:
    argv, environ = request.get("argv"), request.get("environ")
    if len(descriptors) != 4:
        return "a request without its four descriptors"
    if not isinstance(argv, list) or not all(isinstance(word, str) for word in argv):
        return "a request without its words"
    if argv[1:2] != ["run"] and not names_no_command(argv[1:]):
        return "a request that is neither a run nor the TUI"
    if not isinstance(environ, dict) or not all(isinstance(v, str) for v in environ.values()):
        return "a request without an environment"
    if not isinstance(request.get("umask"), int):
        return "a request without a umask"
    limits = request.get("limits")
    if not isinstance(limits, dict) or set(limits) - set(LIMITS):
        return "a request with unknown limits"
    if os.geteuid() != 0:
        import resource

        for name, (_, hard) in limits.items():
            ours = resource.getrlimit(getattr(resource, name))[1]
            if ours != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or hard > ours):
                return f"the caller's {name} is above what this process can take on"
    return None


def _keep(conn: socket.socket) -> NoReturn:
    """The keeper: in a session of its own (the warm process's end ends no run), take the caller's request, wait
    for its word, fork the run, then pass the caller's signals to it and send how it ended; if the caller goes
    away, the run is killed, as a cold run's process would have died with it. A caller that gave up before its
    word (it then runs the command itself) gets no run here."""
    os.setsid()
    keeper = os.getpid()
    try:
        send_frame(conn, {"hello": True})
        request, descriptors = receive_frame(conn, with_descriptors=True)
    except (EOFError, WireError, OSError, ValueError):
        os._exit(0)
    try:
        refusal = _request_refusal(request, descriptors)
    except (TypeError, ValueError, AttributeError):
        refusal = "a request it cannot read"
    if refusal is not None:
        _log(f"refused a request: {refusal}")
        send_frame(conn, {"refused": refusal})
        os._exit(0)
    send_frame(conn, {"ready": True})
    try:
        word, _ = receive_frame(conn)
    except (EOFError, WireError, OSError, ValueError):
        os._exit(0)
    if word.get("go") is not True:
        os._exit(0)
    run = os.fork()
    if run == 0:
        conn.close()
        from seepient.surfaces.cli.warm_start.runner import become

        become(request, descriptors, keeper)
    close_descriptors(descriptors)
    conn.settimeout(None)
    send_frame(conn, {"started": run})
    pidfd = os.pidfd_open(run)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(conn.fileno(), select.POLLIN)
    while True:
        for fd, _ in poller.poll():
            if fd == pidfd:
                _, status = os.waitpid(run, 0)
                code = os.waitstatus_to_exitcode(status)
                try:
                    send_frame(conn, {"killed": -code} if code < 0 else {"exit": code})
                finally:
                    os._exit(0)
            try:
                message, _ = receive_frame(conn)
            except (EOFError, WireError, OSError):
                os.kill(run, signal.SIGKILL)
                os.waitpid(run, 0)
                os._exit(0)
            _forward(run, message.get("signal"))


def _forward(run: int, number: object) -> None:
    if not isinstance(number, int) or number not in FORWARDED_SIGNALS:
        return
    # The run's process group has no parent in its session, so the kernel drops a SIGTSTP sent to it; SIGSTOP
    # is what a stop means there.
    os.kill(run, signal.SIGSTOP if number == signal.SIGTSTP else number)


def _reap(keepers: set[int]) -> None:
    for keeper in list(keepers):
        try:
            done, _ = os.waitpid(keeper, os.WNOHANG)
        except ChildProcessError:
            done = keeper
        if done:
            keepers.discard(keeper)


def _still_ours(path: str, inode: int | None) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def _idle_seconds(environ: Mapping[str, str]) -> float:
    try:
        return max(1.0, float(environ.get(place.IDLE_VARIABLE, _DEFAULT_IDLE_SECONDS)))
    except ValueError:
        return _DEFAULT_IDLE_SECONDS


def _log(text: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {text}\n")
    sys.stderr.flush()


if __name__ == "__main__":
    main()
