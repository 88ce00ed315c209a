"""A fresh jail set up before its command is known: bubblewrap builds the next foreground command's namespaces
and mounts while the model is still answering, and bash inside it waits for the command on its standard input.
The next shell step hands the command over instead of waiting for the setup; every jail still runs one command.

A standby jail is only handed a command whose jail would be exactly the same: the same bubblewrap command line up
to the command (``BwrapSandbox.layout_argv``, worked out again for that command from a fresh look at the host),
and the same file at every path that command line mounts on or from. The second check matters because a mount
hangs on the file it was made on: a file replaced on the host by a rename (``passwd`` rewriting
``/etc/shadow``, a tool rewriting its token) takes the mount hiding it away in every other mount namespace, and
the new file would be readable in a jail set up before the rename. Either check failing, the standby jail is
killed before it ran anything and the command gets a jail of its own, as without a standby.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_BASH = next((path for path in ("/usr/bin/bash", "/bin/bash") if os.access(path, os.X_OK)), None)
"""The bash the trampoline runs on: a system one, which every jail shows."""

_FIELDS = "SEEPIENT_STANDBY"
# Read the command: eight digits giving the length of what follows, then a separator byte and the fields, each
# ending in it (working directory, the value of `_` or nothing, how many variables follow, the variables, the
# argv). `read -N` reads a counted pipe in a few system calls where `mapfile` reads one byte per call, and one
# word splitting on the separator (no field holds it; no globbing) cuts the fields where a loop costs bash
# about 12 us each. Bash starts with an empty environment, so in the C locale, where `-N` counts bytes. Then
# give the command /dev/null as its input as every jailed command has, drop what bash set of its own and exec.
# `export` with no names would list the environment, hence the guard; `exec` lowers SHLVL by one, so the
# value to pass on comes one higher; `_` is bash's own and is set only for exec.
# Before all that, while it waits, bash loads the locales it was given as arguments (those the commands' locale
# variables are expected to name) and goes back to C: exporting LANG makes bash set its locale, which the first
# time reads some 25 files (0.2 to 0.3 ms of each command here), and glibc keeps what it loaded for the next time.
# A name that is not a locale here is only a warning, sent nowhere.
_TRAMPOLINE = rf"""for {_FIELDS}; do {{ LC_ALL=${_FIELDS}; }} 2>/dev/null; done; unset -v LC_ALL {_FIELDS}
read -r -N 8 {_FIELDS} && read -r -N "$((10#${_FIELDS}))" {_FIELDS} && exec </dev/null || exit 125
set -f && IFS=${{{_FIELDS}:0:1}} && {_FIELDS}=(${{{_FIELDS}:1}}) && set +f && unset -v IFS || exit 125
cd -- "${{{_FIELDS}[0]}}" || exit 125
unset -v PWD OLDPWD SHLVL
(( {_FIELDS}[2] )) && export -- "${{{_FIELDS}[@]:3:{_FIELDS}[2]}}"
if [ -n "${{{_FIELDS}[1]}}" ]; then _="${{{_FIELDS}[1]}}" exec -- "${{{_FIELDS}[@]:3+{_FIELDS}[2]}}"; fi
exec -- "${{{_FIELDS}[@]:3+{_FIELDS}[2]}}"
"""

_SEPARATORS = bytes([*range(2, 9), *range(14, 32), *b"!#%+,-./:;=@^_|~"])
"""Bytes the fields may be cut at: neither what bash's word splitting treats as white space (which would merge
empty fields), nor the two it uses to quote internally (0x01, 0x7f), nor NUL (which no field can hold)."""

_MAX_AGE_S = 30.0
"""A standby jail unused this long is killed: an idle session keeps no processes, and a command after a long
pause does not notice the few milliseconds."""

_SET_UP_WITHIN_S = 0.025
"""A standby handed a command younger than this may still have been being set up (8 to 10 ms here, more on a
loaded machine), and the command waited for the rest: the model answers faster than a jail is set up."""

_GONE_WITHIN_S = 2.0
"""How long killing a standby jail waits for its processes to be gone (they have been sent SIGKILL; a busy
machine takes milliseconds)."""

_MAX_PAYLOAD_BYTES = 32 * 1024
"""Below a pipe's capacity (64 KiB on Linux), so handing the command over never blocks."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_LOCALE_VARIABLES = frozenset(
    """LANG LC_ALL LC_ADDRESS LC_COLLATE LC_CTYPE LC_IDENTIFICATION LC_MEASUREMENT LC_MESSAGES LC_MONETARY
    LC_NAME LC_NUMERIC LC_PAPER LC_TELEPHONE LC_TIME""".split()
)
"""The variables from which glibc (and bash, when one is exported) takes the locale."""

_BASH_OWN = frozenset(
    """BASH BASHOPTS BASHPID BASH_ALIASES BASH_ARGC BASH_ARGV BASH_ARGV0 BASH_CMDS BASH_COMMAND BASH_ENV
    BASH_EXECUTION_STRING BASH_LINENO BASH_REMATCH BASH_SOURCE BASH_SUBSHELL BASH_VERSINFO BASH_VERSION
    BASH_XTRACEFD COMP_WORDBREAKS DIRSTACK EPOCHREALTIME EPOCHSECONDS EUID FUNCNAME GROUPS HISTCMD LINENO
    MAPFILE OPTARG OPTIND PIPESTATUS POSIXLY_CORRECT PPID RANDOM REPLY SECONDS SHELLOPTS SRANDOM UID""".split()
)
"""Variables bash will not export as given: read-only ones, ones whose value it computes when read, and ones
that change how the trampoline's own lines run. A command whose environment names one gets its own jail."""

_PATH_OPTIONS = {"--ro-bind": 2, "--bind": 2, "--dev": 1, "--proc": 1, "--tmpfs": 1, "--remount-ro": 1}
_OTHER_OPTIONS = {
    "--unshare-all": 0,
    "--share-net": 0,
    "--die-with-parent": 0,
    "--new-session": 0,
    "--clearenv": 0,
    "--cap-drop": 1,
}


def mounted_files(layout: Sequence[str]) -> tuple[tuple[int, int] | None, ...] | None:
    """The device and inode at every path ``layout`` mounts on or from (None where nothing is); None when the
    command line has an option this module does not know, which then never runs in a standby jail."""
    found: list[tuple[int, int] | None] = []
    index = 1
    while index < len(layout):
        option = layout[index]
        count = _PATH_OPTIONS.get(option)
        if count is None:
            skipped = _OTHER_OPTIONS.get(option)
            if skipped is None:
                return None
            index += 1 + skipped
            continue
        for path in layout[index + 1 : index + 1 + count]:
            try:
                status = os.lstat(path)
            except OSError:
                found.append(None)
            else:
                found.append((status.st_dev, status.st_ino))
        index += 1 + count
    return tuple(found)


def command_payload(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> bytes | None:
    """What the trampoline reads to run ``argv`` at ``cwd`` with the environment a jail of its own gives it:
    ``env``, with ``PWD`` naming ``cwd`` (as bubblewrap's ``--chdir`` sets it); None when bash could not pass
    that environment on unchanged (a name it treats as its own or cannot export) or it is too long.

    Without ``SHLVL`` in ``env`` the command gets ``SHLVL=0`` (bash's ``exec`` always exports one): the same to
    the ``bash -c`` a command line runs in, which counts from there as from nothing, and plain programs are
    always given one (``plain_command.py``)."""
    underscore = env.get("_", "")
    shlvl = env.get("SHLVL")
    if shlvl is not None and not shlvl.isdigit():
        return None
    variables: list[str] = []
    for name, value in env.items():
        if name in ("_", "SHLVL", "PWD"):
            continue
        if not _NAME.fullmatch(name) or name in _BASH_OWN or name == _FIELDS:
            return None
        variables.append(f"{name}={value}")
    variables.append(f"PWD={cwd}")
    if shlvl is not None:
        variables.append(f"SHLVL={int(shlvl) + 1}")
    fields = [str(cwd), underscore, str(len(variables)), *variables, *argv]
    if not argv or any("\0" in field for field in fields):
        return None
    encoded = [os.fsencode(field) for field in fields]
    separator = _separator(encoded)
    if separator is None:
        return None
    body = separator + b"".join(field + separator for field in encoded)
    payload = b"%08d%s" % (len(body), body)
    return payload if len(payload) <= _MAX_PAYLOAD_BYTES else None


def locales_named(env: Mapping[str, str]) -> tuple[str, ...]:
    """The locales ``env``'s locale variables name, once each: what a standby jail's bash loads while it waits."""
    return tuple(dict.fromkeys(value for name, value in env.items() if name in _LOCALE_VARIABLES and value))


def _separator(fields: Sequence[bytes]) -> bytes | None:
    """The first of ``_SEPARATORS`` no field holds (None when every one is held somewhere)."""
    for byte in _SEPARATORS:
        separator = bytes((byte,))
        if not any(separator in field for field in fields):
            return separator
    return None


@dataclass
class _Standby:
    process: subprocess.Popen[bytes]
    layout: tuple[str, ...]
    files: tuple[tuple[int, int] | None, ...]
    spawned_at: float


def _spawn(layout: tuple[str, ...], workspace: Path, locales: Sequence[str]) -> _Standby | None:
    files = mounted_files(layout)
    if files is None or _BASH is None:
        return None
    argv = [*layout, "--chdir", str(workspace), "--", _BASH, "-c", _TRAMPOLINE, "bash", *locales]
    try:
        # As run_process starts a command: a new session makes bubblewrap the leader of the group one killpg
        # reaches. Nothing of Seepient's environment reaches bubblewrap or the trampoline.
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={},
            start_new_session=True,
        )
    except OSError:
        return None
    return _Standby(process, layout, files, time.monotonic())


def _namespace_init(pid: int) -> int | None:
    """A pidfd of bubblewrap ``pid``'s child, the init of the jail's pid namespace, or None when it has none.

    The pid is read from /proc and then checked to still be a child of ``pid`` once the pidfd is held: the
    pidfd then names that process whatever happens to the number."""
    if not hasattr(os, "pidfd_open"):
        return None
    try:
        (child,) = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pidfd = os.pidfd_open(int(child))
    except (OSError, ValueError):
        return None
    try:
        parent = int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        parent = None
    if parent != pid:
        os.close(pidfd)
        return None
    return pidfd


def _kill(standby: _Standby) -> None:
    # Bubblewrap's death reaches the jail's processes as a signal (--die-with-parent), so they can still be
    # there when bubblewrap has been reaped; its namespace's init is gone only once every process of the jail
    # is (the kernel kills and reaps the rest before the init ends), so waiting for it makes "killed" mean gone.
    init = _namespace_init(standby.process.pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(standby.process.pid, signal.SIGKILL)
    standby.process.wait()
    if init is not None:
        try:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                signal.pidfd_send_signal(init, signal.SIGKILL)
            # poll, not select: a process serving many sessions holds descriptors past select's 1024.
            gone = select.poll()
            gone.register(init, select.POLLIN)
            gone.poll(_GONE_WITHIN_S * 1000)
        finally:
            os.close(init)
    for stream in (standby.process.stdin, standby.process.stdout, standby.process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


class JailStandby:
    """The one standby jail a session keeps for its next foreground command."""

    def __init__(self, workspace: Path) -> None:
        self._workspace = workspace
        self._ready: _Standby | None = None
        self._expiry: asyncio.TimerHandle | None = None
        self._closed = False
        self.needs_head_start = False
        """Whether the last standby handed a command was younger than its setup may take: then the next is best
        started as that command starts rather than once it has ended."""

    @property
    def ready(self) -> bool:
        return self._ready is not None

    def refill(self, layout: Sequence[str], *, locales: Sequence[str] = ()) -> None:
        """Start setting up a jail with ``layout`` for the next command, unless one is there; its bash loads
        ``locales`` while it waits (``locales_named`` of the environment commands get). Started from the
        event loop's own thread: the start is a vfork and an exec (about 0.2 ms), and bubblewrap does the rest
        in its own process; starting it from a worker thread made the loop and that thread take turns at the
        interpreter lock, which cost each step more than the start itself (issue #19)."""
        if self._closed or self._ready is not None:
            return
        standby = _spawn(tuple(layout), self._workspace, locales)
        if standby is None:
            return
        self._ready = standby
        self._expiry = asyncio.get_running_loop().call_later(_MAX_AGE_S, self._discard)

    def _discard(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        standby, self._ready = self._ready, None
        if standby is not None:
            _kill(standby)

    def take(
        self, layout: Sequence[str], *, argv: Sequence[str], cwd: Path, env: Mapping[str, str]
    ) -> subprocess.Popen[bytes] | None:
        """The standby jail, handed ``argv`` to run at ``cwd`` with ``env``, when it is the jail ``layout``
        describes with the same files mounted as when it was set up; None otherwise (it is then killed, nothing
        having run in it, and the caller starts a jail of its own)."""
        standby = self._ready
        if standby is None:
            return None
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        self._ready = None
        payload = command_payload(argv, cwd=cwd, env=env)
        usable = (
            payload is not None
            and standby.process.poll() is None
            and time.monotonic() - standby.spawned_at < _MAX_AGE_S
            and standby.layout == tuple(layout)
            and os.path.isdir(cwd)
            and mounted_files(layout) == standby.files
        )
        stdin = standby.process.stdin
        if not usable or payload is None or stdin is None:
            _kill(standby)
            return None
        self.needs_head_start = time.monotonic() - standby.spawned_at < _SET_UP_WITHIN_S
        try:
            stdin.write(payload)
            stdin.close()
        except OSError:  # the trampoline is gone: nothing ran
            _kill(standby)
            return None
        return standby.process

    async def aclose(self) -> None:
        """Kill the standby jail (the session ends)."""
        self._closed = True
        self._discard()
