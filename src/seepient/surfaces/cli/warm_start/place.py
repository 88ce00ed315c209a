"""Where the warm process listens and which one may serve a caller: the socket sits in a private folder of the
Seepient home, and its name is a digest of everything that decides what a fresh ``seepient`` would load and what
it would be (the code, the interpreter, the startup environment and the process's identity to the kernel), so a
caller only ever reaches a process that is what it would have become itself."""

from __future__ import annotations

import json
import os
import stat
import sys

from seepient._locations import managed_settings, seepient_home

try:
    # The interpreter's own SHA-256, without loading OpenSSL (a few ms of every warm start's client).
    from _sha256 import sha256
except ImportError:  # pragma: no cover - another interpreter build
    from hashlib import sha256

TYPE_CHECKING = False  # not ``typing``'s, which the client does not otherwise load
if TYPE_CHECKING:
    import hashlib
    from collections.abc import Mapping

SWITCH_VARIABLE = "SEEPIENT_WARM_START"
"""``0``: never; ``1``: use one, and start one after a cold run even without a terminal; unset: use one, and
start one after a cold run on a terminal (a script or a CI job is left no process behind)."""
IDLE_VARIABLE = "SEEPIENT_WARM_IDLE_SECONDS"

# sun_path holds 108 bytes with its NUL; a longer home gets no warm start rather than a truncated name.
_MAX_SOCKET_PATH = 100

# Variables read as a process starts: the interpreter's (encodings, locale, hash seed, import path), and Typer's
# and Textual's (read as they are imported). A process started under other values is another process, so they are part of the
# name, and the warm process is given these alone.
_STARTUP_PREFIXES = ("PYTHON", "LC_", "TYPER_", "TEXTUAL_")
_STARTUP_NAMES = frozenset({"LANG", "LANGUAGE", "ESCDELAY"})

# What the kernel says a process is: a run forked by the warm process is what the warm process is, so a caller
# that differs in any of these (another namespace, a seccomp filter, no_new_privs, dropped capabilities, another
# cgroup or security label, a chroot) must not be served: a jailed command reaching the socket would otherwise
# get a run outside its jail.
_NAMESPACES = ("cgroup", "ipc", "mnt", "net", "pid", "pid_for_children", "time", "user", "uts")
_STATUS_FIELDS = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")
_STATUS_FIELDS += ("Seccomp", "Seccomp_filters")


def startup_environment(environ: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k.startswith(_STARTUP_PREFIXES) or k in _STARTUP_NAMES}


def chosen(environ: Mapping[str, str]) -> bool:
    """Whether a warm start may be used: not switched off by the variable, the managed settings or the user's
    settings (``runtime.warmStart``). A settings file that cannot be read or parsed says no, so the cold start
    that follows reports it as it always would."""
    if environ.get(SWITCH_VARIABLE) == "0" or not sys.platform.startswith("linux"):
        return False
    for path in (managed_settings(environ), os.path.join(seepient_home(environ), "settings.json")):
        value = _warm_start_setting(path)
        if value is not None:
            return value
    return True


def _warm_start_setting(path: str) -> bool | None:
    try:
        with open(path, encoding="utf-8") as settings:
            text = settings.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return False
    try:
        runtime = json.loads(text).get("runtime", {})
        value = runtime.get("warmStart")
    except (ValueError, AttributeError):
        return False
    return value if isinstance(value, bool) else None


def private_folder(environ: Mapping[str, str], *, create: bool) -> str | None:
    """``<home>/run``, if it is (or, with ``create``, can be made) a real folder of this user's that nobody else
    can enter; ``None`` otherwise, and the caller starts cold. A symlink, another owner or a wider mode is
    refused rather than repaired: something put it there."""
    home = os.path.abspath(seepient_home(environ))
    folder = os.path.join(home, "run")
    if create:
        try:
            os.makedirs(home, mode=0o700, exist_ok=True)
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        found = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o077:
        return None
    return folder


def socket_path(folder: str, key: str) -> str | None:
    path = os.path.join(folder, f"{key}.sock")
    return path if len(os.fsencode(path)) <= _MAX_SOCKET_PATH else None


def process_identity(pid: int | str = "self") -> dict[str, object]:
    """What the kernel says process ``pid`` is (see ``_NAMESPACES``). Raises ``OSError`` when it cannot be read,
    which the warm process takes as a refusal."""
    base = f"/proc/{pid}"
    namespaces = {}
    for name in _NAMESPACES:
        try:
            found = os.stat(f"{base}/ns/{name}")
        except FileNotFoundError:
            continue
        namespaces[name] = [found.st_dev, found.st_ino]
    with open(f"{base}/status", encoding="utf-8") as status_file:
        status = dict(line.rstrip("\n").split(":\t", 1) for line in status_file if ":\t" in line)
    with open(f"{base}/cgroup", encoding="utf-8") as cgroup_file:
        cgroup = cgroup_file.read()
    try:
        with open(f"{base}/attr/current", "rb") as attr_file:
            label = attr_file.read().decode("utf-8", "replace")
    except OSError:
        label = None
    root = os.stat(f"{base}/root")
    return {
        "namespaces": namespaces,
        "status": {field: status.get(field) for field in _STATUS_FIELDS},
        "cgroup": cgroup,
        "label": label,
        "root": [root.st_dev, root.st_ino, os.readlink(f"{base}/root")],
    }


def import_path() -> list[str]:
    """``sys.path`` without its first entry when that is the script's folder or the working directory (the
    warm process starts with ``-P``, which leaves it out: a planted module there must not load)."""
    return list(sys.path if sys.flags.safe_path else sys.path[1:])


def server_key(environ: Mapping[str, str], package: str | None = None) -> str:
    """The digest a warm process serving this caller is named after; the warm process computes it again for
    itself and serves only under the name it finds."""
    digest = sha256()
    # ``safe_path`` is left out: the warm process starts with ``-P`` and the console script without it, and
    # ``import_path`` already holds what it changes.
    flags = [getattr(sys.flags, name) for name in dir(sys.flags) if name[0] != "_" and name != "safe_path"]
    flags = [flag for flag in flags if isinstance(flag, (int, bool))]
    interpreter = [os.path.realpath(sys.executable), sys.version, flags, sys.getfilesystemencoding()]
    described = [interpreter, import_path(), sorted(startup_environment(environ).items()), process_identity()]
    digest.update(json.dumps(described, sort_keys=True).encode("utf-8", "surrogateescape"))
    for entry in import_path():
        # An installation or upgrade adds and removes entries in its folder, which changes the folder's mtime.
        try:
            digest.update(f"{entry}\0{os.stat(entry).st_mtime_ns}\0".encode("utf-8", "surrogateescape"))
        except OSError:
            digest.update(f"{entry}\0-\0".encode("utf-8", "surrogateescape"))
    _digest_tree(digest, package or _PACKAGE)
    return digest.hexdigest()[:32]


_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))


def _digest_tree(digest: hashlib._Hash, root: str) -> None:
    """Seepient's own files, each by name, size and mtime: an edit in a working copy is another code."""
    pending = [root]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name == "__pycache__":
                    continue
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                    continue
                found = entry.stat(follow_symlinks=False)
                digest.update(
                    f"{entry.path}\0{found.st_size}\0{found.st_mtime_ns}\0".encode("utf-8", "surrogateescape")
                )
