"""The path guard: resolves every path a tool or shell command names and refuses what policy forbids.

Reads may go anywhere except sensitive locations; writes must stay inside the workspace and away from
Seepient's own state. Every check runs on the fully resolved path (symlinks anywhere, ``..``, ``~``),
and sensitive locations are also matched on the path as written, so ``/proc/self/environ`` is caught
before it resolves to ``/proc/<pid>/environ``. The guard answers at preparation time; the executor
re-checks where a path could change between the check and the use.
"""

from __future__ import annotations

import functools
import glob as _glob
import itertools
import os
import posixpath
import pwd
import stat
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from fnmatch import fnmatchcase
from pathlib import Path

from seepient.config.sensitive_paths import (
    GIT_DIR_CONTROL,
    GIT_DIR_MARKERS,
    foreign_config_for,
    git_control_in,
)
from seepient.policy.sensitive import (
    SensitiveLocation,
    build_locations,
    component_key,
    path_keys,
)
from seepient.protocol import PathDenied, ResolvedPath
from seepient.protocol.errors import InvalidInputError
from seepient.shell import is_shell_sink

RULE_INVALID = "path_guard:invalid"
RULE_OUTSIDE = "path_guard:outside_workspace"
RULE_SENSITIVE = "path_guard:sensitive"
RULE_SELF = "self_protection"
RULE_FOREIGN = "path_guard:foreign_config"

MAX_PATH_BYTES = 4096  # PATH_MAX on Linux
MAX_NAME_BYTES = 255  # NAME_MAX on every common file system
MAX_SYMLINKS = 40  # the kernel's own limit before ELOOP
MAX_GLOB_MATCHES = 2000

_PROTECTED_NAME = component_key(".seepient")
_WORKTREES_NAME = component_key("worktrees")
_GIT_NAME = component_key(".git")
_HOOKS_NAME = "hooks"
# The last component of every file git_control can refuse: other paths skip the file-system probes.
_GIT_CONTROL_LAST = frozenset({*(tail[-1] for tail in GIT_DIR_CONTROL), *GIT_DIR_MARKERS, _GIT_NAME})
_GIT_CONTROL_FILES = ("config", "config.worktree", "hooks")


def _exists(path: str) -> bool:
    return os.path.lexists(path)


def _is_git_directory(folder: str) -> bool:
    """Whether git's discovery takes ``folder`` for a git directory (``HEAD`` or ``commondir``, or both
    ``objects`` and ``refs``): a bare repository is one wherever it lies."""
    if any(_exists(f"{folder}/{name}") for name in ("HEAD", "commondir")):
        return True
    return os.path.isdir(f"{folder}/objects") and os.path.isdir(f"{folder}/refs")


class UnresolvablePath(InvalidInputError, ValueError):
    """A path whose symlinks cannot be followed (a loop, or a directory the process may not inspect)."""


_Inspected = tuple[int | None, str | None, UnresolvablePath | None]
_MEMO: ContextVar[dict[str, _Inspected] | None] = ContextVar("seepient_path_memo", default=None)
_RESOLVED: ContextVar[dict[str, str] | None] = ContextVar("seepient_resolved_memo", default=None)


@contextmanager
def resolution_memo() -> Iterator[None]:
    """Within the block each path is inspected (lstat, readlink) once: a policy evaluation judges one
    consistent view of the file system, and pays for every directory of a long path only once."""
    token = _MEMO.set({})
    resolved_token = _RESOLVED.set({})
    try:
        yield
    finally:
        _RESOLVED.reset(resolved_token)
        _MEMO.reset(token)


def _inspect(candidate: str) -> _Inspected:
    """``(mode or None when missing, link target when a symlink, error)`` for one path, memoised in a block."""
    memo = _MEMO.get()
    if memo is not None and candidate in memo:
        return memo[candidate]
    found: _Inspected
    try:
        mode: int | None = os.lstat(candidate).st_mode
    except (FileNotFoundError, NotADirectoryError):
        found = (None, None, None)
    except PermissionError:
        found = (
            0,
            None,
            UnresolvablePath(f"cannot inspect {candidate} to follow symbolic links: permission denied"),
        )
    except OSError as exc:
        found = (0, None, UnresolvablePath(f"cannot inspect {candidate}: {exc.strerror}"))
    else:
        target = None
        error = None
        if stat.S_ISLNK(mode):
            try:
                target = os.readlink(candidate)
            except OSError as exc:
                error = UnresolvablePath(f"cannot read the symbolic link {candidate}: {exc.strerror}")
        found = (mode, target, error)
    if memo is not None:
        memo[candidate] = found
    return found


def real_path(path: str) -> str:
    """Resolve an absolute path the way the kernel walks it, without requiring the final part to exist.

    Each component is looked at in turn: a symlink is replaced by its target (absolute targets restart
    at ``/``), ``..`` climbs from the *resolved* prefix, and once a component is missing the rest is
    joined as written, so a file that does not exist yet resolves through its deepest existing ancestor.
    """
    memo = _RESOLVED.get()
    if memo is not None:
        known = memo.get(path)
        if known is None:
            known = memo[path] = _real_path(path)
        return known
    return _real_path(path)


def _real_path(path: str) -> str:
    pending = [part for part in reversed(path.split("/"))]
    resolved = "/"
    links = 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            resolved = posixpath.dirname(resolved)
            continue
        candidate = resolved + name if resolved.endswith("/") else f"{resolved}/{name}"
        mode, target, error = _inspect(candidate)
        if error is not None:
            raise error
        if mode is None:
            resolved = candidate
            continue
        if target is not None:
            links += 1
            if links > MAX_SYMLINKS:
                raise UnresolvablePath(f"more than {MAX_SYMLINKS} symbolic links while resolving {path}")
            if target.startswith("/"):
                resolved = "/"
            pending.extend(reversed(target.split("/")))
            continue
        resolved = candidate
    return resolved


# The checks below are pure functions of the text, asked for the same words evaluation after evaluation.
@functools.lru_cache(maxsize=4096)
def _lexical(path: str) -> str:
    normal = posixpath.normpath(path)
    # POSIX lets '//x' mean something implementation-defined and normpath keeps it; Linux treats it as '/x'.
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


def _validate(path: object) -> str:
    if not isinstance(path, str):
        raise PathDenied(str(path), f"a path must be text, not {type(path).__name__}", RULE_INVALID)
    return _validated_text(path)


@functools.lru_cache(maxsize=4096)
def _validated_text(path: str) -> str:
    """``path`` when it may name a file; raises ``PathDenied`` (never remembered) when not."""
    if path == "" or path.strip() == "":
        raise PathDenied(
            path, "empty path: name a file relative to the workspace or give an absolute path", RULE_INVALID
        )
    if "\x00" in path:
        raise PathDenied(path, "the path contains a NUL byte, which no file name can hold", RULE_INVALID)
    for ch in path:
        if unicodedata.category(ch) == "Cc":
            raise PathDenied(
                path,
                f"the path contains the control character U+{ord(ch):04X}; such names are refused",
                RULE_INVALID,
            )
    _check_length(path, path)
    return path


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _check_length(requested: str, path: str) -> None:
    size = len(path.encode("utf-8", "surrogatepass"))
    if size > MAX_PATH_BYTES:
        raise PathDenied(
            requested, f"the path is {size} bytes long; the limit is {MAX_PATH_BYTES}", RULE_INVALID
        )
    if size <= MAX_NAME_BYTES:
        return  # no part can be longer than the whole
    for part in path.split("/"):
        size = len(part.encode("utf-8", "surrogatepass"))
        if size > MAX_NAME_BYTES:
            raise PathDenied(
                requested,
                f"the path component {part[:32]!r}… is {size} bytes long; the limit is {MAX_NAME_BYTES}",
                RULE_INVALID,
            )


class PathGuard:
    """Resolves and checks paths for one workspace (implements ``seepient.protocol.PathAccess``)."""

    def __init__(
        self,
        workspace: Path,
        *,
        seepient_home: Path,
        home: Path | None = None,
        shell_scratch: Iterable[Path] = (),
        foreign_allowed: Callable[[str], bool] | None = None,
        extra_protected: Iterable[Path] = (),
    ) -> None:
        """``foreign_allowed`` answers, for a resolved path in the workspace, whether a user-level rule lets
        the model write that configuration file of another program (``config/sensitive_paths.py``)."""
        workspace = Path(workspace).expanduser().absolute()
        if not workspace.is_dir():
            raise ValueError(f"workspace {workspace} is not an existing directory")
        self.workspace = Path(real_path(str(workspace)))
        self.home = Path(_lexical(str(Path(home).absolute() if home is not None else Path.home())))
        self.seepient_home = Path(_lexical(str(Path(seepient_home).expanduser().absolute())))
        self._sensitive, self._protected = build_locations(
            home=self.home,
            seepient_home=self.seepient_home,
            workspace=self.workspace,
            extra_protected=tuple(Path(p) for p in extra_protected),
        )
        # Opt-in: where every shell command is known to run in a sandbox with a private /tmp, shell
        # writes there never reach the host and may be allowed. Off by default (invariant 2 is literal),
        # and never for the file tools, which commit on the host itself.
        self._scratch = tuple(real_path(_lexical(str(Path(p).absolute()))) for p in shell_scratch)
        self._root = str(self.workspace)
        # The user's own skills and AGENTS.md are instructions meant for the model; everything else in
        # Seepient's home (keys, grants, the audit log) stays unreadable. Only the resolved path counts, so
        # a link inside skills/ that points at a key is still refused.
        self._readable_home = (str(self.seepient_home / "skills"), str(self.seepient_home / "AGENTS.md"))
        self._foreign_allowed = foreign_allowed or (lambda _absolute: False)

    # -- PathAccess -------------------------------------------------------------------------------

    def for_read(self, path: str) -> ResolvedPath:
        """Resolve ``path`` for reading; raise ``PathDenied`` when it is a sensitive location."""
        lexical, resolved = self._resolve(_validate(path), base=self._root, shell=False, write=False)
        if not self.is_user_instruction(resolved):
            self._refuse_sensitive(path, lexical, resolved, write=False)
        return self._answer(path, resolved)

    def is_user_instruction(self, resolved: str) -> bool:
        """Whether a resolved path is one of the user's own skills or their AGENTS.md in Seepient's home."""
        return any(_under(resolved, allowed) for allowed in self._readable_home)

    def for_write(self, path: str) -> ResolvedPath:
        """Resolve ``path`` for writing; it must land inside the workspace and away from protected state."""
        lexical, resolved = self._resolve(_validate(path), base=self._root, shell=False, write=True)
        self._refuse_for_write(path, lexical, resolved)
        return self._answer(path, resolved)

    # -- shell operands ---------------------------------------------------------------------------

    def check_shell_path(self, word: str, *, cwd: Path, write: bool) -> ResolvedPath:
        """Check one static shell operand (quotes already removed) as the shell at ``cwd`` would open it.

        A leading ``~`` is expanded even if it was quoted: that can only make the check stricter.
        Writes may also go to ``/dev/null``-like sinks and, when the guard was given ``shell_scratch``, there.
        """
        _validate(word)
        base = self._base(cwd)
        lexical, resolved = self._resolve(word, base=base, shell=True, write=write)
        if is_shell_sink(lexical):
            return ResolvedPath(requested=word, absolute=lexical, relative=None)
        if not write:
            self._refuse_sensitive(word, lexical, resolved, write=False)
            return self._answer(word, resolved)
        if not self.is_inside(resolved) and self._in_scratch(resolved):
            self._refuse_protected(word, lexical, resolved)
            self._refuse_sensitive(word, lexical, resolved, write=True)
            return self._answer(word, resolved)
        self._refuse_for_write(word, lexical, resolved)
        return self._answer(word, resolved)

    def check_shell_glob(
        self, pattern: str, *, cwd: Path, write: bool, dotglob: bool = False
    ) -> tuple[ResolvedPath, ...]:
        """Check an unquoted glob operand: against every location it *could* name and every file it names now.

        The pattern is matched component by component against the guarded locations (a leading
        wildcard skips dot-files unless ``dotglob``, as bash does), then expanded on disk and each
        match checked like a plain operand; a pattern the guard cannot bound raises ``PathDenied``.
        """
        _validate(pattern)
        base = self._base(cwd)
        expanded = self._expand_tilde(pattern, shell=True)
        absolute = expanded if expanded.startswith("/") else f"{base}/{expanded}"
        parts = [p for p in absolute.split("/") if p not in ("", ".")]
        first_glob = next((i for i, p in enumerate(parts) if _has_glob(p)), len(parts))
        if any(p == ".." for p in parts[first_glob:]):
            raise PathDenied(
                pattern, "a '..' after a wildcard cannot be bounded before the command runs", RULE_INVALID
            )
        prefix = real_path("/" + "/".join(parts[:first_glob]))
        rest = parts[first_glob:]
        self._refuse_pattern(pattern, prefix, rest, write=write, dotglob=dotglob)
        # iglob stops as soon as the limit is passed instead of listing a whole tree first.
        found = (
            _glob.iglob(_glob.escape(prefix) + "/" + "/".join(rest), include_hidden=dotglob)
            if rest
            else [prefix]
        )
        matches = list(itertools.islice(found, MAX_GLOB_MATCHES + 1))
        if len(matches) > MAX_GLOB_MATCHES:
            raise PathDenied(pattern, f"the pattern names more than {MAX_GLOB_MATCHES} files", RULE_INVALID)
        checked = [self.check_shell_path(m, cwd=Path(base), write=write) for m in sorted(matches)]
        if not checked:
            # Nothing matches yet: bash passes the pattern through literally, so check that name.
            checked.append(self.check_shell_path(prefix + "/" + "/".join(rest), cwd=Path(base), write=write))
        return tuple(checked)

    # -- questions the engine asks ----------------------------------------------------------------

    def is_inside(self, absolute: str) -> bool:
        return absolute == self._root or absolute.startswith(self._root.rstrip("/") + "/")

    def sensitive_below(self, absolute: str) -> str | None:
        """The reason, when a recursive read of ``absolute`` would reach a sensitive location below it."""
        found = self._sensitive.first_below([absolute], write=False)
        return None if found is None else f"{absolute} contains {found.reason}"

    def protected_below(self, absolute: str) -> str | None:
        """The reason, when a recursive change under ``absolute`` would reach protected state."""
        if self._protected.first_match([absolute], write=True) is not None:
            return None
        found = self._protected.first_below([absolute], write=True)
        return None if found is None else f"{absolute} contains {found.reason}"

    # -- internals --------------------------------------------------------------------------------

    def _base(self, cwd: Path) -> str:
        cwd_text = str(cwd)
        if not cwd_text.startswith("/"):
            cwd_text = f"{self._root}/{cwd_text}"
        return real_path(_lexical(cwd_text))

    def _expand_tilde(self, path: str, *, shell: bool) -> str:
        if not path.startswith("~"):
            return path
        name, sep, rest = path[1:].partition("/")
        if name == "":
            return str(self.home) + (f"/{rest}" if sep else "")
        try:
            user_home = pwd.getpwnam(name).pw_dir
        except KeyError:
            if shell:
                return path  # bash leaves ~unknown-user as a literal word
            raise PathDenied(
                path, f"~{name} is not a known user; give the path without '~{name}'", RULE_INVALID
            ) from None
        return user_home + (f"/{rest}" if sep else "")

    def _resolve(self, path: str, *, base: str, shell: bool, write: bool) -> tuple[str, str]:
        expanded = self._expand_tilde(path, shell=shell)
        absolute = expanded if expanded.startswith("/") else f"{base}/{expanded}"
        _check_length(path, absolute)
        try:
            resolved = real_path(absolute)
        except UnresolvablePath as exc:
            # Still say *why* when the path as written is already a guarded location.
            self._refuse_sensitive(path, _lexical(absolute), _lexical(absolute), write=write)
            raise PathDenied(path, str(exc), RULE_INVALID) from exc
        _check_length(path, resolved)
        return _lexical(absolute), resolved

    def _answer(self, requested: str, resolved: str) -> ResolvedPath:
        relative = None
        if self.is_inside(resolved):
            relative = "." if resolved == self._root else resolved[len(self._root.rstrip("/")) + 1 :]
        return ResolvedPath(requested=requested, absolute=resolved, relative=relative)

    def _in_scratch(self, resolved: str) -> bool:
        # The sandbox's /tmp is a fresh tmpfs with the workspace bound into it, so scratch is whatever
        # is neither the workspace, a home, Seepient's home nor a directory that contains one of them.
        personal = (self._root, str(self.home), real_path(str(self.home)), str(self.seepient_home))
        if any(_under(resolved, p) or _under(p, resolved) for p in personal):
            return False
        return any(_under(resolved, s) for s in self._scratch)

    def _refuse_sensitive(self, requested: str, lexical: str, resolved: str, *, write: bool) -> None:
        found = self._sensitive.first_match((lexical, resolved), write=write)
        if found is not None:
            verb = "writing" if write else "reading"
            raise PathDenied(
                requested,
                f"{verb} {resolved} is refused: {_where(found)} holds {found.reason}",
                RULE_SENSITIVE,
            )

    def is_worktree_content(self, absolute: str) -> bool:
        """Whether ``absolute`` is ordinary content of a worktree Seepient made: below
        ``.seepient/worktrees/<name>/`` of an existing worktree (its ``.git`` is a regular file), and neither
        that worktree's ``.git`` nor any ``.seepient`` inside it, which stay as protected as the project's own.
        A worktree's files are code like the main checkout's; nothing Seepient trusts is read from there."""
        if not self.is_inside(absolute) or absolute == self._root:
            return False
        parts = absolute[len(self._root.rstrip("/")) + 1 :].split("/")
        keys = tuple(component_key(part) for part in parts)
        if len(keys) < 4 or keys[0] != _PROTECTED_NAME or keys[1] != _WORKTREES_NAME:
            return False
        if keys[3] == _GIT_NAME or _PROTECTED_NAME in keys[3:] or keys[2] in ("", ".", ".."):
            return False
        mode, _, error = _inspect("/".join([self._root.rstrip("/"), *parts[:3], ".git"]))
        return error is None and mode is not None and stat.S_ISREG(mode)

    def _refuse_protected(self, requested: str, lexical: str, resolved: str) -> None:
        spellings = tuple(s for s in dict.fromkeys((lexical, resolved)) if not self.is_worktree_content(s))
        found = self._protected.first_match(spellings, write=True)
        nested = (
            self.is_inside(resolved)
            and _PROTECTED_NAME in path_keys(resolved[len(self._root) :])
            and not self.is_worktree_content(resolved)
        )
        if found is not None or nested:
            reason = found.reason if found is not None else "a project's Seepient settings, grants and hooks"
            raise PathDenied(
                requested,
                f"{resolved} belongs to {reason}; the model cannot change Seepient's own security state",
                RULE_SELF,
            )

    def foreign_config(self, absolute: str) -> str | None:
        """Why a path in the workspace is another program's configuration (what runs it, and when), or None."""
        if not self.is_inside(absolute) or absolute == self._root:
            return None
        found = foreign_config_for(absolute[len(self._root.rstrip("/")) + 1 :], key=component_key)
        return None if found is None else f"{found.program} runs it {found.when}"

    def git_control(self, absolute: str) -> str | None:
        """Why a path in the workspace is a control file of a git directory below the top level (a nested
        checkout's ``.git``, a submodule's or a worktree's git directory, a bare repository git finds on
        ``cd``) or a ``.git`` pointer at any depth, or None. git runs what these name on the host the next time
        anyone uses git there, whichever folder of the workspace that is."""
        if not self.is_inside(absolute) or absolute == self._root:
            return None
        base = self._root.rstrip("/")
        parts = absolute[len(base) + 1 :].split("/")
        keys = tuple(component_key(part) for part in parts)
        if keys[-1] not in _GIT_CONTROL_LAST and _HOOKS_NAME not in keys:
            return None
        for depth in range(len(keys)):
            folder = "/".join([base, *parts[:depth]])
            inside = _GIT_NAME in keys[:depth] or _is_git_directory(folder)
            reason = git_control_in(keys[depth:], inside)
            if reason is not None:
                return reason
        # In the other order, config first: the marker would make that folder a repository whose config git
        # then honours.
        folder = "/".join([base, *parts[:-1]])
        if (
            keys[-1] in GIT_DIR_MARKERS
            and _GIT_NAME not in keys
            and not _is_git_directory(folder)
            and any(_exists(f"{folder}/{name}") for name in _GIT_CONTROL_FILES)
        ):
            return "it makes a folder holding git config or hooks a repository git runs them from"
        return None

    def _refuse_git_control(self, requested: str, lexical: str, resolved: str) -> None:
        for spelling in dict.fromkeys((lexical, resolved)):
            reason = self.git_control(spelling)
            if reason is not None:
                raise PathDenied(
                    requested,
                    f"writing {spelling} is refused: git reads it as a control file ({reason})",
                    RULE_SENSITIVE,
                )

    def _refuse_foreign(self, requested: str, lexical: str, resolved: str) -> None:
        # Both spellings: a link named .envrc that points at an ordinary file is still read by direnv.
        for spelling in dict.fromkeys((lexical, resolved)):
            reason = self.foreign_config(spelling)
            if reason is None or self._foreign_allowed(spelling):
                continue
            raise PathDenied(
                requested,
                f"writing {spelling} is refused: {reason}, outside the sandbox, without anyone asking it to run "
                "this project; only a rule in your own settings (user, managed or --config, not the "
                "project's) can allow it",
                RULE_FOREIGN,
            )

    def _refuse_for_write(self, requested: str, lexical: str, resolved: str) -> None:
        self._refuse_protected(requested, lexical, resolved)
        self._refuse_sensitive(requested, lexical, resolved, write=True)
        if not self.is_inside(resolved):
            shown = "" if resolved == lexical else f" (it resolves to {resolved})"
            raise PathDenied(
                requested,
                f"writes must stay inside the workspace {self._root}; {lexical} is outside it{shown}",
                RULE_OUTSIDE,
            )
        self._refuse_git_control(requested, lexical, resolved)
        self._refuse_foreign(requested, lexical, resolved)

    def _refuse_pattern(
        self, requested: str, prefix: str, rest: list[str], *, write: bool, dotglob: bool
    ) -> None:
        keys = path_keys(prefix)
        pattern_keys = [component_key(p) for p in rest]

        def could_name(location: SensitiveLocation) -> bool:
            if location.writes_only and not write:
                return False
            parts = location.parts
            if len(parts) <= len(keys):
                return location.matches(keys)
            if not all(fnmatchcase(k, p) for k, p in zip(keys, parts, strict=False)):
                return False
            tail = parts[len(keys) :]
            if len(pattern_keys) < len(tail):
                return False  # the pattern stops above the location; only a recursive tool reaches it
            return all(_glob_component(p, t, dotglob) for p, t in zip(pattern_keys, tail, strict=False))

        candidates = [(loc, RULE_SELF) for loc in self._protected.locations] if write else []
        candidates += [(loc, RULE_SENSITIVE) for loc in self._sensitive.locations]
        for location, rule in candidates:
            if could_name(location):
                raise PathDenied(
                    requested,
                    f"the pattern could name {_where(location)}, which holds {location.reason}",
                    rule,
                )
        if write and self.is_inside(prefix):
            relative_keys = path_keys(prefix[len(self._root) :]) + tuple(pattern_keys)
            if any(_glob_component(p, _PROTECTED_NAME, dotglob) for p in relative_keys):
                raise PathDenied(
                    requested,
                    "the pattern could name a project's .seepient directory; "
                    "the model cannot change Seepient's own security state",
                    RULE_SELF,
                )


def _where(location: SensitiveLocation) -> str:
    return location.shown or "/" + "/".join(location.parts)


def _has_glob(part: str) -> bool:
    return any(ch in part for ch in "*?[")


def _glob_component(pattern: str, name: str, dotglob: bool) -> bool:
    """Whether a bash glob component can match ``name`` (both keys); a dot-file needs a literal dot unless dotglob."""
    if name.startswith(".") and not pattern.startswith(".") and not dotglob:
        return False
    # A guarded location may itself be a wildcard (/proc/*/environ); a pattern component matches it
    # when either side could stand for the other.
    return fnmatchcase(name, pattern) or fnmatchcase(pattern, name)
