"""Keeps a jailed command from leaving behind configuration that a program outside the jail would run: git's
control files in every repository of the workspace (top level, nested, bare, a ``gitdir:`` file, a worktree,
a submodule) and other programs' configuration (``.envrc``, editor tasks, ``.mcp.json``, ``.gitmodules``).

The jail binds the existing control files of the top-level repository read-only, but a file that does not
exist yet cannot be bound, and ``python3 -c`` writes a file as surely as ``echo >``. So every command is
bracketed by two snapshots of the workspace's control files; afterwards, whatever the command planted is put
back (a changed file gets its old bytes again) or moved out of the workspace into
``$SEEPIENT_HOME/quarantine/`` (a new file, a new repository), and the command's result says what and why.

What counts as planted in git (DESIGN §4 invariant 11): config keys outside a short list of keys that name
things and never run them (``core.fsmonitor``, ``core.hooksPath``, ``!`` aliases, filter, diff and merge
drivers, ``include.path``, ``core.worktree`` outside the workspace…), any hook, a pointer (``commondir``, a
worktree's ``gitdir``, a ``.git`` file, ``objects/info/alternates``) that leads outside the workspace or to a
repository that is new and itself planted, and ``info/attributes`` naming drivers. A repository's own
configuration that was there before the command is left alone: only what the command added counts.

Change detection is by ``lstat``: inode, size, and the modification and status-change times. A process cannot
set a file's ctime, so a write that restores the mtime (``touch -r``) still shows. Directory listings are
cached on the same key, so a second snapshot of an unchanged tree costs one ``lstat`` per directory.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from seepient.config.sensitive_paths import FOREIGN_FILE_NAMES, FOREIGN_TREE_NAMES, foreign_config_for
from seepient.execution.git_config_keys import config_entries, is_safe_key

ControlKind = Literal["config", "hook", "pointer", "attributes", "alternates", "foreign", "ignore"]

_MAX_KEPT_BYTES = 1 << 20
"""Control files are small; one larger than this is not kept for restoring, and a change to it is quarantined."""

_MAX_SUBTREE_FILES = 2000
"""How many files of one foreign configuration folder (``.idea``) are tracked; beyond that, the folder as a whole."""

_GIT_SKIP = frozenset({"objects", "refs", "logs", "lfs", "rr-cache", "index", "packed-refs"})
"""Folders of a git directory that hold data, never configuration: not walked (``objects/info/alternates``
is looked at by name)."""

_DRIVER_ATTRIBUTES = ("filter", "diff", "merge")

IGNORE_FILE_NAMES = frozenset({".gitignore", ".ignore", ".rgignore"})
"""Files the grep and glob tools read on the host in every folder they search (ripgrep and the Python search
alike), besides a git directory's ``info/exclude``. ripgrep opens them through a symbolic link: one planted to
``/dev/zero`` made it allocate without bound, one to a file outside the workspace had it read (and quote, in
its parse errors) a file the model chose. Only those that are not regular files are tracked."""


@dataclass(frozen=True)
class ControlEntry:
    """One control file as a snapshot saw it: what it is, its ``lstat`` key, and its bytes when small."""

    kind: ControlKind
    key: tuple[int, int, int, int, int]
    content: bytes | None
    link: str | None = None
    gitdir: str | None = None
    """For git entries, the workspace-relative git directory it belongs to."""


@dataclass(frozen=True)
class ControlSnapshot:
    """Every control file of the workspace, by workspace-relative path, and every git directory found."""

    entries: dict[str, ControlEntry]
    git_dirs: frozenset[str]


@dataclass(frozen=True)
class Repair:
    """What was done about one planted file, for the command's result and the session's warnings."""

    path: str
    action: Literal["restored", "quarantined", "removed"]
    reason: str
    moved_to: Path | None = None

    def describe(self) -> str:
        if self.action == "restored":
            return f"{self.path}: put back as it was ({self.reason})"
        if self.action == "quarantined":
            return f"{self.path}: moved to {self.moved_to} ({self.reason})"
        return f"{self.path}: removed ({self.reason})"


def repairs_note(repairs: list[Repair]) -> str:
    """The note appended to a command's output when it planted something."""
    lines = "; ".join(repair.describe() for repair in repairs)
    return (
        f"Seepient undid what this command left for programs outside the sandbox to run: {lines}. Such files "
        "would run on the host the next time git, an editor or a shell is used here; do not write them (ask the "
        "user to, if they are needed)."
    )


def _key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


@dataclass
class _Listing:
    key: tuple[int, int, int, int, int]
    names: tuple[tuple[str, bool, bool], ...]
    """(name, is a directory, is a symlink) of every entry."""
    by_name: dict[str, tuple[bool, bool]] = field(default_factory=dict)
    subdirs: tuple[str, ...] = ()
    dot_git: tuple[bool, bool] | None = None
    foreign_files: tuple[str, ...] = ()
    foreign_trees: tuple[str, ...] = ()
    ignore_files: tuple[str, ...] = ()
    git_dir: bool = False

    def classify(self) -> _Listing:
        """Work out once per listing what a walk needs from it (a tree of 20,000 files is walked per command)."""
        self.by_name = {name: (is_dir, link) for name, is_dir, link in self.names}
        self.git_dir = _looks_like_git_dir(self.by_name)
        self.dot_git = self.by_name.get(".git")
        self.foreign_trees = tuple(
            n for n, (d, link) in self.by_name.items() if (d or link) and n in FOREIGN_TREE_NAMES
        )
        self.foreign_files = tuple(
            n for n, (d, _) in self.by_name.items() if not d and n in FOREIGN_FILE_NAMES
        )
        self.ignore_files = tuple(n for n, (d, _) in self.by_name.items() if not d and n in IGNORE_FILE_NAMES)
        self.subdirs = tuple(
            n
            for n, (d, link) in self.by_name.items()
            if d and not link and n != ".git" and n not in FOREIGN_TREE_NAMES
        )
        return self


@dataclass
class _Walk:
    entries: dict[str, ControlEntry] = field(default_factory=dict)
    git_dirs: set[str] = field(default_factory=set)


def _foreign_reason(relative: str) -> str:
    found = foreign_config_for(relative)
    return f"{found.program} runs it {found.when}" if found is not None else "another program runs it"


class ControlGuard:
    """Snapshots and repairs one workspace's control files; safe to share between a session's tasks."""

    def __init__(
        self,
        workspace: Path,
        *,
        quarantine_root: Path,
        foreign_allowed: Callable[[str], bool] | None = None,
    ) -> None:
        self.workspace = workspace.resolve()
        self._root = str(self.workspace)
        self._quarantine_root = quarantine_root
        self._foreign_allowed = foreign_allowed or (lambda _relative: False)
        self._listings: dict[str, _Listing] = {}
        self._contents: dict[str, tuple[tuple[int, int, int, int, int], bytes | None]] = {}
        self._lock = threading.Lock()

    # -- snapshots ----------------------------------------------------------------------------------------

    def snapshot(self) -> ControlSnapshot:
        with self._lock:
            walk = _Walk()
            self._walk("", walk)
            return ControlSnapshot(entries=walk.entries, git_dirs=frozenset(walk.git_dirs))

    def _abs(self, relative: str) -> str:
        return f"{self._root}/{relative}" if relative else self._root

    def _list(self, relative: str) -> _Listing | None:
        path = self._abs(relative)
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return None
        key = _key(st)
        cached = self._listings.get(relative)
        if cached is not None and cached.key == key:
            return cached
        names: list[tuple[str, bool, bool]] = []
        try:
            with os.scandir(path) as found:
                for entry in found:
                    try:
                        link = entry.is_symlink()
                        names.append((entry.name, not link and entry.is_dir(follow_symlinks=False), link))
                    except OSError:
                        continue
        except OSError:
            return None
        listing = _Listing(key, tuple(sorted(names))).classify()
        self._listings[relative] = listing
        return listing

    def _walk(self, relative: str, walk: _Walk) -> None:
        pending = [relative]
        while pending:
            current = pending.pop()
            listing = self._list(current)
            if listing is None:
                continue
            if listing.git_dir:
                self._git_dir(current, listing.by_name, walk, pending)
                continue
            prefix = f"{current}/" if current else ""
            if listing.dot_git is not None:
                if listing.dot_git[0]:
                    self._git_dir(prefix + ".git", None, walk, pending)
                else:
                    self._pointer(prefix + ".git", walk, gitdir=None)
            for name in listing.foreign_trees:
                self._foreign_tree(prefix + name, walk)
            for name in listing.foreign_files:
                if foreign_config_for(prefix + name) is not None:
                    self._record(prefix + name, "foreign", walk)
            for name in listing.ignore_files:
                self._ignore_file(prefix + name, walk)
            pending.extend(prefix + name for name in listing.subdirs)

    def _git_dir(
        self,
        relative: str,
        names: dict[str, tuple[bool, bool]] | None,
        walk: _Walk,
        pending: list[str],
    ) -> None:
        if relative in walk.git_dirs:
            return
        walk.git_dirs.add(relative)
        if names is None:
            listing = self._list(relative)
            names = {} if listing is None else listing.by_name
        for name in ("config", "config.worktree"):
            if name in names:
                self._record(f"{relative}/{name}", "config", walk, gitdir=relative)
        if "commondir" in names:
            self._pointer(f"{relative}/commondir", walk, gitdir=relative)
        if "gitdir" in names:
            self._pointer(f"{relative}/gitdir", walk, gitdir=relative)
        hooks = names.get("hooks")
        if hooks is not None:
            if hooks[1] or not hooks[0]:
                self._record(f"{relative}/hooks", "hook", walk, gitdir=relative)
            else:
                self._hooks(f"{relative}/hooks", walk, gitdir=relative)
        info = self._list(f"{relative}/info") if names.get("info", (False, False))[0] else None
        if info is not None and any(name == "attributes" for name, _, _ in info.names):
            self._record(f"{relative}/info/attributes", "attributes", walk, gitdir=relative)
        if info is not None and any(name == "exclude" for name, _, _ in info.names):
            self._ignore_file(f"{relative}/info/exclude", walk)
        objects_info = (
            self._list(f"{relative}/objects/info") if names.get("objects", (False, False))[0] else None
        )
        if objects_info is not None and any(name == "alternates" for name, _, _ in objects_info.names):
            self._record(f"{relative}/objects/info/alternates", "alternates", walk, gitdir=relative)
        # Linked worktrees' and submodules' git directories live inside this one; anything else that is not
        # data could still hold a repository (a bare one planted in .git/x), so it is walked like any folder.
        for name, (is_dir, link) in names.items():
            if not is_dir or link or name in _GIT_SKIP or name in ("hooks", "info"):
                continue
            child = f"{relative}/{name}"
            if name == "worktrees":
                sub = self._list(child)
                for worktree, sub_dir, sub_link in sub.names if sub is not None else ():
                    if sub_dir and not sub_link:
                        self._git_dir(f"{child}/{worktree}", None, walk, pending)
                continue
            pending.append(child)

    def _hooks(self, relative: str, walk: _Walk, *, gitdir: str) -> None:
        self._record_tree(relative, "hook", walk, gitdir=gitdir, folders=False)

    def _foreign_tree(self, relative: str, walk: _Walk) -> None:
        self._record(relative, "foreign", walk)
        self._record_tree(relative, "foreign", walk, gitdir=None, folders=True)

    def _record_tree(
        self, relative: str, kind: ControlKind, walk: _Walk, *, gitdir: str | None, folders: bool
    ) -> None:
        """Every file below ``relative`` (and every folder, with ``folders``), up to ``_MAX_SUBTREE_FILES``."""
        stack = [relative]
        count = 0
        while stack and count < _MAX_SUBTREE_FILES:
            current = stack.pop()
            listing = self._list(current)
            for name, is_dir, link in listing.names if listing is not None else ():
                child = f"{current}/{name}"
                if is_dir and not link:
                    stack.append(child)
                    if not folders:
                        continue
                else:
                    count += 1
                self._record(child, kind, walk, gitdir=gitdir)

    def _pointer(self, relative: str, walk: _Walk, *, gitdir: str | None) -> None:
        self._record(relative, "pointer", walk, gitdir=gitdir)
        entry = walk.entries.get(relative)
        if entry is None:
            return
        target = self._pointer_target(relative, entry)
        if target is not None and target not in walk.git_dirs:
            # Whatever a pointer names is a git directory to git: its config and hooks count, whatever it
            # looks like (a tracked folder holding a file called `config`).
            self._git_dir(target, None, walk, [])

    def _pointer_target(self, relative: str, entry: ControlEntry) -> str | None:
        """The workspace-relative directory a pointer names, or None when it leads outside or nowhere."""
        base = os.path.dirname(self._abs(relative))
        if entry.link is not None:
            target = os.path.join(base, entry.link)
        elif entry.content is not None:
            text = entry.content.decode("utf-8", "replace").strip()
            if os.path.basename(relative) == ".git":
                if not text.startswith("gitdir:"):
                    return None
                text = text.removeprefix("gitdir:").strip()
            elif os.path.basename(relative) == "gitdir":
                # A worktree's gitdir names that worktree's `.git` file, not a git directory.
                return None
            target = os.path.join(base, text)
        else:
            return None
        real = os.path.realpath(target)
        if real != self._root and not real.startswith(self._root + "/"):
            return None
        relative_target = os.path.relpath(real, self._root)
        return "" if relative_target == "." else relative_target

    def _ignore_file(self, relative: str, walk: _Walk) -> None:
        """An ignore file that is not a regular file (a link, a FIFO, a device) is tracked; a regular one only
        filters what the tools list."""
        try:
            mode = os.lstat(self._abs(relative)).st_mode
        except OSError:
            return
        if not stat.S_ISREG(mode):
            self._record(relative, "ignore", walk)

    def _record(self, relative: str, kind: ControlKind, walk: _Walk, *, gitdir: str | None = None) -> None:
        path = self._abs(relative)
        try:
            st = os.lstat(path)
        except OSError:
            return
        key = _key(st)
        link: str | None = None
        content: bytes | None = None
        if stat.S_ISLNK(st.st_mode):
            with contextlib.suppress(OSError):
                link = os.readlink(path)
        elif stat.S_ISREG(st.st_mode):
            cached = self._contents.get(relative)
            if cached is not None and cached[0] == key:
                content = cached[1]
            else:
                content = _read_small(path)
                self._contents[relative] = (key, content)
        walk.entries[relative] = ControlEntry(kind, key, content, link, gitdir)

    # -- repairs ------------------------------------------------------------------------------------------

    def repair(self, before: ControlSnapshot) -> tuple[list[Repair], ControlSnapshot]:
        """Compare the workspace with ``before`` and undo what was planted; returns what was done and the
        snapshot after the repairs (the next command's ``before``)."""
        after = self.snapshot()
        repairs: list[Repair] = []
        new_git_dirs = sorted(after.git_dirs - before.git_dirs, key=len)
        quarantined_dirs: list[str] = []
        for gitdir in new_git_dirs:
            if any(gitdir == q or gitdir.startswith(q + "/") for q in quarantined_dirs):
                continue
            problems = self._new_repository_problems(gitdir, after)
            if problems and gitdir != "":
                repairs.append(
                    self._quarantine(gitdir, "a new git repository holding " + "; ".join(problems))
                )
                quarantined_dirs.append(gitdir)
        for relative in sorted(after.entries):
            if any(relative == q or relative.startswith(q + "/") for q in quarantined_dirs):
                continue
            now = after.entries[relative]
            was = before.entries.get(relative)
            if was is not None and was.key == now.key:
                continue
            if now.gitdir is not None and now.gitdir in after.git_dirs - before.git_dirs:
                continue  # judged with its new repository above
            reason = self._planted(relative, now, was, before, after)
            if reason is None:
                continue
            repairs.append(self._undo(relative, was, reason))
        if repairs:
            return repairs, self.snapshot()
        return repairs, after

    def _planted(
        self,
        relative: str,
        now: ControlEntry,
        was: ControlEntry | None,
        before: ControlSnapshot,
        after: ControlSnapshot,
    ) -> str | None:
        if now.kind == "foreign":
            if self._foreign_allowed(relative):
                return None
            return f"{_foreign_reason(relative)}, outside the sandbox"
        if now.kind == "hook":
            if relative.endswith(".sample") and now.link is None:
                return None  # git never runs a .sample hook
            return "git runs hooks outside the sandbox"
        if now.kind == "config":
            added = _unsafe_entries(self._abs(relative), now, self._root) - (
                _unsafe_entries(self._abs(relative), was, self._root) if was is not None else set()
            )
            if not added:
                return None
            return "git config that runs programs or reads more config: " + ", ".join(
                sorted(k for k, _ in added)
            )
        if now.kind == "ignore":
            target = self._abs(relative)
            if now.link is not None and self._inside(target) and os.path.isfile(target):
                return None  # `.ignore -> .gitignore`: a file of the workspace, read as it is
            return (
                "an ignore file the search tools read on the host, leading outside the workspace or to "
                "something that is not a file"
            )
        if now.kind == "attributes":
            return "attributes that choose the programs git runs on file contents"
        if now.kind == "alternates":
            outside = [
                line
                for line in _lines(now)
                if not self._inside(os.path.join(self._abs(relative), "..", "..", line))
            ]
            return "alternates outside the workspace: " + ", ".join(outside) if outside else None
        if now.kind == "pointer":
            target = self._pointer_target(relative, now)
            name = os.path.basename(relative)
            if name == "gitdir":
                line = (now.content or b"").decode("utf-8", "replace").strip()
                if (
                    now.link is None
                    and line
                    and self._inside(os.path.join(os.path.dirname(self._abs(relative)), line))
                ):
                    return None
                return "a worktree's gitdir pointing outside the workspace"
            if target is None:
                return "it points git at a directory outside the workspace (or nowhere)"
            if target in before.git_dirs:
                return None
            problems = self._new_repository_problems(target, after)
            return ("it points git at a repository holding " + "; ".join(problems)) if problems else None
        return None

    def _new_repository_problems(self, gitdir: str, snapshot: ControlSnapshot) -> list[str]:
        problems: list[str] = []
        for relative, entry in snapshot.entries.items():
            if entry.gitdir != gitdir:
                continue
            name = relative[len(gitdir) + 1 :] if gitdir else relative
            if entry.kind == "hook" and not (relative.endswith(".sample") and entry.link is None):
                problems.append(f"hook {name}")
            elif entry.kind == "config":
                unsafe = _unsafe_entries(self._abs(relative), entry, self._root)
                if unsafe:
                    problems.append(f"{name} " + ", ".join(sorted(k for k, _ in unsafe)))
            elif entry.kind == "attributes":
                problems.append(f"{name} naming drivers")
            elif entry.kind == "alternates":
                problems.append(f"{name}")
            elif entry.kind == "pointer" and os.path.basename(relative) == "commondir":
                target = self._pointer_target(relative, entry)
                if target is None:
                    problems.append("commondir pointing outside the workspace")
        return problems

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real == self._root or real.startswith(self._root + "/")

    def _undo(self, relative: str, was: ControlEntry | None, reason: str) -> Repair:
        if was is not None and was.link is None and was.content is not None and not relative.endswith("/"):
            moved = self._move_out(relative)
            try:
                _write_back(self._abs(relative), was.content, was.key[4])
            except OSError as exc:
                return Repair(
                    relative,
                    "quarantined",
                    f"{reason}; the old content could not be put back: {exc.strerror}",
                    moved,
                )
            return Repair(relative, "restored", reason, moved)
        return self._quarantine(relative, reason)

    def _quarantine(self, relative: str, reason: str) -> Repair:
        moved = self._move_out(relative)
        if moved is None:
            return Repair(relative, "removed", reason)
        return Repair(relative, "quarantined", reason, moved)

    def _move_out(self, relative: str) -> Path | None:
        """Move a path out of the workspace into the quarantine folder (never following a link); if that
        fails, delete it. Returns where it went, or None when it had to be deleted or was already gone."""
        source = self._abs(relative)
        if not os.path.lexists(source):
            return None
        stamp = time.strftime("%Y%m%dT%H%M%S")
        destination = self._quarantine_root / f"{stamp}-{secrets.token_hex(3)}" / relative
        try:
            destination.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            shutil.move(source, destination)
            self._forget(relative)
            return destination
        except OSError:
            pass
        with contextlib.suppress(OSError):
            if os.path.isdir(source) and not os.path.islink(source):
                shutil.rmtree(source)
            else:
                os.unlink(source)
        self._forget(relative)
        return None

    def _forget(self, relative: str) -> None:
        for table in (self._listings, self._contents):
            for key in [k for k in table if k == relative or k.startswith(relative + "/")]:
                del table[key]


def _looks_like_git_dir(names: dict[str, tuple[bool, bool]]) -> bool:
    """What git itself accepts as a git directory (a bare repository discovered on ``cd``): a HEAD file and
    objects and refs folders, or a HEAD and a commondir. Looser than git, so nothing git accepts is missed."""
    head = names.get("HEAD")
    if head is None or head[0]:
        return False
    return ("objects" in names and "refs" in names) or "commondir" in names


def _read_small(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _MAX_KEPT_BYTES + 1)
        return None if len(data) > _MAX_KEPT_BYTES else data
    finally:
        os.close(fd)


def _write_back(path: str, content: bytes, mode: int) -> None:
    directory = os.path.dirname(path)
    temp = os.path.join(directory, f".seepient-restore-{secrets.token_hex(4)}")
    fd = os.open(
        temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, stat.S_IMODE(mode) or 0o644
    )
    try:
        os.write(fd, content)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)


def _lines(entry: ControlEntry) -> Iterator[str]:
    for line in (entry.content or b"").decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            yield line


def _unsafe_entries(path: str, entry: ControlEntry | None, root: str) -> set[tuple[str, str]]:
    """The (key, value) pairs of a git config file that can run a program or read more configuration."""
    if entry is None:
        return set()
    if entry.link is not None:
        return {("(the config is a symbolic link)", entry.link)}
    if entry.content is None:
        return {("(the config is too large to check)", "")}
    return {
        (key, value)
        for key, value in config_entries(entry.content)
        if not is_safe_key(key, value, path, root)
    }
