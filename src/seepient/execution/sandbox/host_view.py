"""What the jail shows of the host outside the workspace: every home folder replaced by an empty tmpfs, the tool
installations on ``PATH`` shown back read-only, and every read-sensitive location of the one list
(``config/sensitive_paths.py``) hidden, so an interpreter in the jail reads no credential a shell analysis
would have stopped ``cat`` from reading.

What is shown back, and why that is enough for ordinary builds:

- each ``PATH`` entry under a home, as the installation it belongs to: a dot-folder directly under the home
  (``~/.pyenv`` for ``~/.pyenv/shims``, ``~/.cargo`` for ``~/.cargo/bin``, with the companions a tool needs:
  ``~/.rustup`` for cargo's proxies), or the entry alone inside a general-purpose folder (``~/.local/bin``,
  ``~/bin``), plus the installation each symbolic link there resolves to (pipx, uv tools);
- the interpreter installation Seepient runs on (the egress forwarder starts it inside the jail) and the one a
  workspace virtualenv's ``python`` links to (a venv made from a pyenv or uv Python): only a link named like an
  interpreter that leads to an executable of that name in a ``bin`` folder, never any other link there;
- the user's git identity, as environment variables rather than ``~/.gitconfig``: git in the jail needs a
  name and an e-mail to commit, not the user's credential helpers, aliases or includes.

Credential files inside what is shown back (``~/.cargo/credentials.toml``) stay hidden. User-level settings
(``execution.sandboxReadable``/``sandboxHidden``, never a project's) add paths to either side.
"""

from __future__ import annotations

import glob
import os
import re
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from seepient.config.sensitive_paths import ETC_SECRETS, HOME_CREDENTIALS, HOST_SOCKETS
from seepient.execution.host_programs import host_program

_CACHE_SECONDS = 2.0
"""How long the installations found for a view are reused (a run of shell steps shares them), and with them the
list of sensitive locations to look for: a new account's home or a new file matching a pattern of
``ETC_SECRETS`` waits this long to be seen. Whether each listed location exists is asked for every view."""

_GENERAL_FOLDERS = frozenset({".local", ".config", ".cache"})
"""Dot-folders that hold many programs' files (and some secrets): only the ``PATH`` entry inside is shown."""

_COMPANIONS: Mapping[str, tuple[str, ...]] = {
    ".cargo": (".rustup",),
    ".asdf": (".tool-versions",),
    ".juliaup": (".julia",),
}
"""What an installation needs beside itself: cargo's proxies run toolchains from ~/.rustup."""

_VENV_FOLDERS = (".venv", "venv", "env", ".env")

_SYSTEM_ROOTS = frozenset(
    Path(p)
    for p in ("/", "/usr", "/etc", "/var", "/opt", "/bin", "/sbin", "/lib", "/lib64", "/srv", "/tmp", "/run")
)


@dataclass(frozen=True)
class HostView:
    """The mounts that shape what a jailed command sees outside the workspace (see the module docstring)."""

    hidden_homes: tuple[Path, ...]
    """Replaced by an empty, writable tmpfs (a throwaway home for caches)."""
    shown: tuple[Path, ...]
    """Bound back read-only inside the hidden homes, in this order."""
    hidden: tuple[tuple[Path, bool], ...]
    """Existing read-sensitive locations (real paths) with whether each is a directory."""
    env: Mapping[str, str]
    """Variables the jailed command gets on top of the scrubbed environment (the git identity)."""

    def visible(self, path: Path) -> bool:
        """Whether ``path`` would be visible in the jail before the workspace is bound (not under a hidden home,
        or shown back)."""
        if not any(_within(path, home) for home in self.hidden_homes):
            return True
        return any(_within(path, shown) for shown in self.shown)


def text_within(path: str, roots: Sequence[str]) -> bool:
    """``path`` is one of ``roots`` or lies below one; every path is absolute and normalised (a real path or a
    ``Path``'s text), so comparing text is ``Path.is_relative_to`` without its parsing, which made up most of
    the cost of building every step's command line."""
    if path.startswith("//") or any(root.startswith("//") for root in roots):
        # POSIX lets a path begin with exactly two slashes, a root of its own that pathlib keeps apart.
        return any(Path(path) == Path(root) or Path(path).is_relative_to(root) for root in roots)
    return any(path == root or path.startswith(root if root.endswith("/") else root + "/") for root in roots)


def path_order(path: str) -> tuple[str, ...]:
    """The order ``Path`` objects sort in (component by component), so a folder's mount comes before those
    inside it however the names compare to ``/``."""
    return tuple(path.split("/"))


def _within(path: Path, root: Path) -> bool:
    """``path`` is ``root`` or lies below it, as ``Path.is_relative_to`` says for absolute paths (both sides
    lexical), on their text: a view makes thousands of these checks."""
    inside, top = str(path), str(root)
    if inside.startswith("//") or top.startswith("//"):
        # POSIX lets a path begin with exactly two slashes, a root of its own that pathlib keeps apart.
        return path == root or path.is_relative_to(root)
    return inside == top or inside.startswith(top if top.endswith("/") else top + "/")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _homes(home: Path) -> list[Path]:
    """Every home to hide: the user's, /root and /home as a whole; none that is a system folder (HOME=/)."""
    found: list[Path] = []
    for candidate in (_real(home), Path("/root"), Path("/home")):
        if candidate in _SYSTEM_ROOTS or any(
            _within(root, candidate) for root in _SYSTEM_ROOTS if root != Path("/")
        ):
            continue
        if any(_within(candidate, private) for private in (Path("/tmp"), Path("/run"))):
            continue  # already behind the jail's private /tmp and /run
        if candidate.is_dir() and not any(_within(candidate, other) for other in found):
            found = [other for other in found if not _within(other, candidate)] + [candidate]
    return found


def _owning_home(path: Path, homes: Sequence[Path]) -> Path | None:
    """The home folder holding ``path``: the user's home, /root, or the /home/NAME it lies in."""
    for home in homes:
        if not _within(path, home) or path == home:
            continue
        if home == Path("/home"):
            parts = path.relative_to(home).parts
            return home / parts[0] if len(parts) > 1 else None
        return home
    return None


def _installation(path: Path, homes: Sequence[Path]) -> list[Path]:
    """What to show back for a program or a ``PATH`` folder under a home (see the module docstring)."""
    owner = _owning_home(path, homes)
    if owner is None:
        return []
    first = path.relative_to(owner).parts[0]
    if first.startswith(".") and first not in _GENERAL_FOLDERS:
        return [owner / first, *(owner / companion for companion in _COMPANIONS.get(first, ()))]
    if first == "go":
        return [owner / first]
    # A program inside a general folder: its own prefix when it sits in PREFIX/bin, else just its folder.
    folder = path if path.is_dir() else path.parent
    if folder.name == "bin" and folder.parent != owner:
        return [folder.parent]
    return [folder]


def _linked_programs(folder: Path, named: re.Pattern[str] | None = None) -> Iterable[Path]:
    """Where the symbolic links in ``folder`` (those whose name fits ``named``, if given) lead: pipx and uv put
    links to their venvs in ~/.local/bin."""
    try:
        with os.scandir(folder) as entries:
            links = [
                entry.path
                for entry in entries
                if entry.is_symlink() and (named is None or named.fullmatch(entry.name))
            ]
    except OSError:
        return []
    return [_real(Path(link)) for link in links]


_INTERPRETER_NAME = re.compile(r"python(?:\d+(?:\.\d+)?)?")


def _venv_interpreters(folder: Path, workspace: Path) -> list[Path]:
    """The interpreters a workspace virtualenv's ``python`` links lead to: only links named like an
    interpreter that resolve to an executable file named so, in a ``bin`` folder outside the workspace. The
    workspace is the model's, so any other link there (``ln -s ~/Documents .venv/bin/x``) would pick what the
    jail shows of the home."""
    found = []
    for link in _linked_programs(folder, named=_INTERPRETER_NAME):
        if (
            _INTERPRETER_NAME.fullmatch(link.name)
            and link.parent.name == "bin"
            and link.is_file()
            and os.access(link, os.X_OK)
            and not _within(link, _real(workspace))
        ):
            found.append(link)
    return found


def _start_git_identity(home: Path) -> subprocess.Popen[str] | None:
    """Start reading the user's git name and e-mail from their own global config on the host; the view is
    worked out while git runs (``_git_identity`` takes its answer), since waiting for git was most of the time
    a view took to build.

    ``git config --global`` only parses the user's files (``~/.gitconfig`` and what it includes, all the
    user's own); it runs from ``/`` so no repository is discovered, with no system config."""
    git = host_program("git")
    if git is None:
        return None
    try:
        return subprocess.Popen(
            [git, "config", "--global", "--includes", "--get-regexp", r"^user\.(name|email)$"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd="/",
            env={
                "HOME": str(home),
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_CONFIG_NOSYSTEM": "1",
            },
        )
    except OSError:
        return None


def _git_identity(started: subprocess.Popen[str] | None) -> dict[str, str]:
    """The git identity ``_start_git_identity`` asked for, as the variables git in the jail reads."""
    if started is None:
        return {}
    try:
        out, _ = started.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        started.kill()
        started.communicate()
        return {}
    values: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if key == "user.name" and value:
            values["GIT_AUTHOR_NAME"] = values["GIT_COMMITTER_NAME"] = value
        elif key == "user.email" and value:
            values["GIT_AUTHOR_EMAIL"] = values["GIT_COMMITTER_EMAIL"] = value
    return values


def _sensitive_candidates(
    home: Path, seepient_home: Path, environ: Mapping[str, str], extra_hidden: Sequence[Path]
) -> list[Path]:
    homes = {_real(home), Path("/root")}
    try:
        homes.update(Path(entry.path) for entry in os.scandir("/home") if entry.is_dir(follow_symlinks=False))
    except OSError:
        pass
    paths: list[Path] = [
        base / entry.path for base in sorted(homes) for entry in HOME_CREDENTIALS if entry.access == "read"
    ]
    for entry in (*ETC_SECRETS, *HOST_SOCKETS):
        if entry.access != "read":
            continue
        if "*" in entry.path:
            paths += [Path(found) for found in glob.glob(entry.path)]
        else:
            paths.append(Path(entry.path))
    paths += [home / ".seepient", seepient_home, *extra_hidden]
    for variable in ("SSH_AUTH_SOCK", "GPG_AGENT_INFO"):
        value = environ.get(variable, "").split(":")[0]
        if value.startswith("/"):
            paths.append(Path(value))
    docker_host = environ.get("DOCKER_HOST", "")
    if docker_host.startswith("unix://"):
        paths.append(Path(docker_host.removeprefix("unix://")))
    runtime_dir = environ.get("XDG_RUNTIME_DIR", "")
    if runtime_dir.startswith("/"):
        # The user's D-Bus session bus lives here, and `systemd-run --user` through it escapes any sandbox.
        paths.append(Path(runtime_dir))
    return paths


def _existing(paths: Iterable[str]) -> tuple[tuple[Path, bool], ...]:
    found: dict[str, bool] = {}
    present = os.access
    for candidate in paths:
        # Most candidates are absent: ``access`` answers with a flag where ``lstat`` raises (a third of the
        # cost of a view); without following a final link, as ``lstat`` would not.
        if not present(candidate, os.F_OK, effective_ids=_EFFECTIVE_IDS, follow_symlinks=False):
            continue
        # Mount on the real location: a symlinked ~/.ssh is hidden where its contents actually are. A link
        # that dangles or loops leads to nothing to hide (and nothing a mount could be made on).
        real = _real_location(candidate)
        if real is not None and real[0] != "/":
            found[real[0]] = real[1]
    directories = [p for p, is_dir in found.items() if is_dir]
    # A path inside another hidden directory is already covered (and its mount point could not be made).
    # Compared as the real paths' text, and given in the order ``Path`` objects sort in.
    return tuple(
        (Path(p), d)
        for p, d in sorted(found.items(), key=lambda item: path_order(item[0]))
        if not text_within(p, [q for q in directories if q != p])
    )


_EFFECTIVE_IDS = os.access in os.supports_effective_ids
_OPEN_PATH_ONLY = getattr(os, "O_PATH", 0)


def _real_location(path: str) -> tuple[str, bool] | None:
    """Where ``path`` really is, every link on the way followed, and whether that is a directory; None when
    nothing is there. On Linux the kernel resolves it (an ``O_PATH`` descriptor opens nothing, not even a FIFO,
    and its ``/proc`` link names the location): a few system calls where ``os.path.realpath`` makes one per
    component in Python."""
    if _OPEN_PATH_ONLY:
        try:
            fd = os.open(path, _OPEN_PATH_ONLY | os.O_CLOEXEC)
        except (OSError, ValueError):
            return None
        try:
            return os.readlink(f"/proc/self/fd/{fd}"), stat.S_ISDIR(os.fstat(fd).st_mode)
        except OSError:
            pass  # no /proc here: resolve it the portable way
        finally:
            os.close(fd)
    real = os.path.realpath(path)
    try:
        return real, stat.S_ISDIR(os.stat(real, follow_symlinks=False).st_mode)
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class _Installations:
    """The part of a view that takes work to find and changes only with the installations and the account (what
    is hidden and shown back, the git identity), and the sensitive locations to look for: reused for a couple of
    seconds. Which of those locations exist is looked up again for every view."""

    homes: tuple[Path, ...]
    shown: tuple[Path, ...]
    candidates: tuple[str, ...]
    env: Mapping[str, str]


def _build(
    home: Path,
    seepient_home: Path,
    environ: Mapping[str, str],
    workspace: Path | None,
    readable: Sequence[Path],
    extra_hidden: Sequence[Path],
) -> _Installations:
    identity = _start_git_identity(_real(home))
    try:
        homes, shown = _mounts(home, environ, workspace, readable)
        candidates = _sensitive_candidates(home, seepient_home, environ, extra_hidden)
    except BaseException:
        if identity is not None:
            identity.kill()
            identity.communicate()
        raise
    return _Installations(tuple(homes), tuple(shown), tuple(map(str, candidates)), _git_identity(identity))


def _mounts(
    home: Path, environ: Mapping[str, str], workspace: Path | None, readable: Sequence[Path]
) -> tuple[list[Path], list[Path]]:
    """The homes to hide and the folders shown back in them (outer first)."""
    homes = _homes(home)
    shown: list[Path] = []
    candidates: list[Path] = []
    folders: set[Path] = set()
    for entry in environ.get("PATH", "").split(":"):
        if not entry.startswith("/"):
            continue  # a relative PATH entry names a folder of whatever the cwd is; nothing to show back
        folder = _real(Path(entry))
        if folder in folders or not folder.is_dir():
            continue  # a folder PATH names twice shows back the same (its links resolved once)
        folders.add(folder)
        if workspace is not None and _within(folder, _real(workspace)):
            # An activated project virtualenv: the model writes its links, so only its interpreters count.
            candidates += _venv_interpreters(folder, workspace)
            continue
        candidates.append(folder)
        if any(_within(folder, h) for h in homes):
            candidates += _linked_programs(folder)
    candidates.append(_real(Path(sys.base_prefix)))
    if workspace is not None:
        for name in _VENV_FOLDERS:
            candidates += _venv_interpreters(workspace / name / "bin", workspace)
    # Many links lead into one installation (cargo's proxies all to rustup): each is placed once.
    for candidate in dict.fromkeys(candidates):
        for path in _installation(candidate, homes):
            if os.path.lexists(path) and path not in shown:
                shown.append(path)
    for path in readable:
        real = _real(path)
        if os.path.lexists(real) and real not in shown:
            shown.append(real)
    # Outer folders first: bubblewrap applies mounts in order, and a later bind inside an earlier one is kept.
    shown.sort(key=lambda p: len(p.parts))
    return homes, shown


class CachedInstallations:
    """One key's installations, when they were found, and the last view made from them (kept while what exists
    stays the same, so a run of steps shares one view object and the sandbox's memo of it)."""

    def __init__(self, found_at: float, installations: _Installations) -> None:
        self.found_at = found_at
        self.installations = installations
        self.last_view: HostView | None = None


_cache: dict[tuple[object, ...], CachedInstallations] = {}
_cache_lock = threading.Lock()


def find_installations(
    home: Path,
    seepient_home: Path,
    environ: Mapping[str, str],
    workspace: Path | None,
    readable: Sequence[Path],
    hidden: Sequence[Path],
) -> CachedInstallations:
    """The part of ``host_view`` that takes work (the installations, the git identity), found now unless
    cached; a session asks for it from a thread while its first model request is out. Which sensitive
    locations exist is not looked up here: every view does that again anyway, and its lstat calls, each
    letting the interpreter lock go, made that thread and the event loop take turns at it for milliseconds."""
    watched = tuple(
        environ.get(name, "")
        for name in ("PATH", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DOCKER_HOST", "XDG_RUNTIME_DIR")
    )
    key = (
        str(home),
        str(seepient_home),
        watched,
        str(workspace),
        tuple(map(str, readable)),
        tuple(map(str, hidden)),
    )
    now = time.monotonic()
    with _cache_lock:
        cached = _cache.get(key)
    if cached is None or now - cached.found_at >= _CACHE_SECONDS:
        cached = CachedInstallations(now, _build(home, seepient_home, environ, workspace, readable, hidden))
        with _cache_lock:
            if len(_cache) > 64:
                _cache.clear()
            _cache[key] = cached
    return cached


def host_view(
    *,
    home: Path,
    seepient_home: Path,
    environ: Mapping[str, str],
    workspace: Path | None = None,
    readable: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
) -> HostView:
    """The view for one home and environment. The installations are reused for a couple of seconds (a run of
    steps shares them); which sensitive locations exist is looked up every time, so a credential created on the
    host a moment ago (``gh auth login`` in another terminal, Seepient's own audit key at its first record) is
    hidden from the very next command."""
    cached = find_installations(home, seepient_home, environ, workspace, readable, hidden)
    found = cached.installations
    existing = _existing(found.candidates)
    last = cached.last_view
    if last is not None and last.hidden == existing:
        return last
    view = HostView(hidden_homes=found.homes, shown=found.shown, hidden=existing, env=found.env)
    cached.last_view = view
    return view
