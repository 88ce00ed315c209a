"""Where credentials and Seepient's own state live, and a matcher that cannot be fooled by case or Unicode tricks.

Locations are compared on *keys*: each path component with Unicode format characters removed
(zero-width joiners, BOMs, bidi marks), NFKC-normalised, case-folded and stripped of trailing dots
and spaces. On Linux ``~/.SSH``, ``~/.ｓｓｈ`` (full-width) and ``~/.s<U+200B>sh`` are different
directories, but on case-insensitive (macOS, Windows) or ignorable-code-point-folding (HFS+)
filesystems they open ``~/.ssh``, so refusing them everywhere costs nothing and closes that hole.
Cross-script look-alikes (a Cyrillic ``ѕ`` in ``.ѕsh``) are left alone: no common filesystem folds
them together, so such a name can never reach the real ``.ssh``.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from seepient.config.sensitive_paths import (
    ETC_SECRETS,
    GIT_CONTROL,
    HOME_CREDENTIALS,
    HOST_SOCKETS,
    PROCESS_AND_DEVICE_SECRETS,
    RUNTIME_SECRETS,
    SensitivePath,
)


def component_key(name: str) -> str:
    """The comparison key of one path component (see the module docstring for why)."""
    if name.isascii():
        key = name.lower()
        stripped = key.rstrip(" .")
        return stripped if stripped else key
    visible = "".join(ch for ch in name if unicodedata.category(ch) != "Cf")
    key = unicodedata.normalize("NFKC", visible).casefold()
    stripped = key.rstrip(" .")
    return stripped if stripped else key


@functools.lru_cache(maxsize=8192)
def path_keys(path: str) -> tuple[str, ...]:
    """Keys of every component of an absolute path (the root itself has none)."""
    return tuple(component_key(part) for part in path.split("/") if part)


@dataclass(frozen=True)
class SensitiveLocation:
    """One guarded location. ``parts`` are keys that may hold ``fnmatch`` wildcards.

    ``subtree`` guards everything below the location as well; ``writes_only`` leaves reads alone.
    """

    parts: tuple[str, ...]
    reason: str
    subtree: bool = True
    writes_only: bool = False
    shown: str = ""

    def matches(self, keys: Sequence[str]) -> bool:
        if len(keys) < len(self.parts) or (not self.subtree and len(keys) != len(self.parts)):
            return False
        return all(fnmatchcase(key, pattern) for key, pattern in zip(keys, self.parts, strict=False))

    def is_below(self, keys: Sequence[str]) -> bool:
        """True when ``keys`` is a strict ancestor of this location (a recursive read there reaches it)."""
        if len(keys) >= len(self.parts):
            return False
        return all(fnmatchcase(key, pattern) for key, pattern in zip(keys, self.parts, strict=False))


def _location(
    path: str, reason: str, *, subtree: bool = True, writes_only: bool = False
) -> SensitiveLocation:
    return SensitiveLocation(path_keys(path), reason, subtree=subtree, writes_only=writes_only, shown=path)


def _spellings(path: Path) -> set[str]:
    """A location as written and as it resolves: a guarded directory reached through a symlink must match too."""
    absolute = os.path.normpath(str(path))
    return {absolute, os.path.realpath(absolute)}


HOME_RELATIVE: tuple[SensitiveLocation, ...] = tuple(
    SensitiveLocation(
        path_keys(entry.path), entry.reason, writes_only=entry.access == "write", shown=entry.path
    )
    for entry in HOME_CREDENTIALS
)


def _from_table(entry: SensitivePath, base: str = "") -> SensitiveLocation:
    path = f"{base}/{entry.path}" if base else entry.path
    return _location(path, entry.reason, subtree=entry.subtree, writes_only=entry.access == "write")


@functools.cache
def _host_secrets() -> tuple[SensitiveLocation, ...]:
    """The locations that are the same for every workspace: built once, not once per session (a server holds
    hundreds of sessions, and the garbage collector walks every object they keep)."""
    entries = (*ETC_SECRETS, *PROCESS_AND_DEVICE_SECRETS, *HOST_SOCKETS, *RUNTIME_SECRETS)
    return tuple(_from_table(entry) for entry in entries)


def build_locations(
    *, home: Path, seepient_home: Path, workspace: Path, extra_protected: Sequence[Path] = ()
) -> tuple[LocationIndex, LocationIndex]:
    """The sensitive index and the self-protected index for one workspace, home and Seepient home;
    ``extra_protected`` are more of Seepient's own files kept elsewhere (an audit key, a witness)."""
    sensitive = list(_host_secrets())
    for spelling in _spellings(Path(f"/proc/{os.getpid()}")):
        sensitive.append(_location(spelling, "the Seepient process's own environment and memory"))
    for spelling in _spellings(workspace):
        # git runs hooks and config-named programs outside any sandbox the next time the user runs git, and
        # the pointers (a `.git` file, commondir, a worktree's gitdir) say which config that is.
        sensitive += [_from_table(entry, spelling) for entry in GIT_CONTROL]
    seepient_reason = "Seepient's own state: settings, grants, keys and the audit log"
    for spelling in _spellings(seepient_home):
        sensitive.append(_location(spelling, seepient_reason))
    home_bases = sorted({"/root", "/home/*"} | _spellings(home))

    protected: list[SensitiveLocation] = []
    for spelling in _spellings(seepient_home):
        protected.append(_location(spelling, seepient_reason))
    for extra in extra_protected:
        for spelling in _spellings(extra):
            sensitive.append(_location(spelling, seepient_reason))
            protected.append(_location(spelling, seepient_reason))
    for spelling in _spellings(workspace / ".seepient") | {f"{s}/.seepient" for s in _spellings(workspace)}:
        protected.append(_location(spelling, "the project's Seepient settings, grants and hooks"))
    return LocationIndex(sensitive, home_bases=home_bases), LocationIndex(protected)


def _component_pattern(part: str) -> str:
    return re.escape(part).replace(r"\*", "[^/]*").replace(r"\?", "[^/]")


@functools.lru_cache(maxsize=256)
def _compile(shapes: tuple[tuple[int, tuple[str, ...], bool], ...]) -> re.Pattern[str] | None:
    """One alternation of the located shapes, each branch named by its location's index in its table."""
    if not shapes:
        return None
    branches = []
    for index, parts, subtree in shapes:
        body = "/".join(_component_pattern(part) for part in parts)
        tail = "(?:/.*)?" if subtree else ""
        branches.append(f"(?P<l{index}>/{body}{tail})")
    return re.compile("(?:" + "|".join(branches) + ")", re.DOTALL)


_WILD = None
"""The bucket of the locations whose first component holds a wildcard: any key may fall in it."""


def _first_of(parts: Sequence[str]) -> str | None:
    first = parts[0] if parts else ""
    return _WILD if "*" in first or "?" in first else first


class _Table:
    """A table's locations, matched as one regular expression per first path component (``/etc``, ``/tmp``)
    and one for those whose first component is a wildcard. The first location that matches wins, as in one
    alternation of them all; split so, a check compiles only the expressions of the components it meets
    (most checks meet the workspace's alone), where one expression of every location cost a couple of
    milliseconds per table at a session's first check."""

    def __init__(self, locations: list[SensitiveLocation]) -> None:
        self.locations = locations
        buckets: dict[str | None, list[tuple[int, tuple[str, ...], bool]]] = {}
        for index, location in enumerate(locations):
            buckets.setdefault(_first_of(location.parts), []).append(
                (index, location.parts, location.subtree)
            )
        self._shapes = {first: tuple(shapes) for first, shapes in buckets.items()}
        self._patterns: dict[str | None, re.Pattern[str] | None] = {}

    def _pattern(self, first: str | None) -> re.Pattern[str] | None:
        try:
            return self._patterns[first]
        except KeyError:
            pattern = self._patterns[first] = _compile(self._shapes.get(first, ()))
            return pattern

    def match(self, key: str) -> SensitiveLocation | None:
        """The first location ``key`` (``/`` and its components' keys) lies at or, for a subtree, below."""
        first = key[1:].partition("/")[0]
        best: int | None = None
        for bucket in (first, _WILD):
            pattern = self._pattern(bucket)
            found = pattern.fullmatch(key) if pattern is not None else None
            if found is not None and found.lastgroup is not None:
                index = int(found.lastgroup[1:])
                best = index if best is None else min(best, index)
        return self.locations[best] if best is not None else None


_BELOW_MEMO_SIZE = 4096
"""How many answers of ``first_below`` and of ``first_match`` (per spelling) an index keeps: they depend on the
text of the paths alone."""


class LocationIndex:
    """Guarded locations compiled into regular expressions, so a check costs a couple of matches per spelling.

    Credential stores under every home (``home_bases``, which may hold ``*``) share one table of
    home-relative locations that is compiled once per process.
    """

    def __init__(self, locations: Iterable[SensitiveLocation], *, home_bases: Iterable[str] = ()) -> None:
        own = list(locations)
        self._below: dict[tuple[tuple[tuple[str, ...], ...], bool], SensitiveLocation | None] = {}
        self._matched: dict[tuple[str, bool], SensitiveLocation | None] = {}
        self._bases = tuple((base, path_keys(base)) for base in home_bases)
        self._read = _Table([loc for loc in own if not loc.writes_only])
        self._write = _Table(own)
        self._home = _Table(list(HOME_RELATIVE)) if self._bases else None
        self.locations: tuple[SensitiveLocation, ...] = (
            *own,
            *(
                SensitiveLocation(keys + rel.parts, rel.reason, shown=f"{base}/{rel.shown}")
                for base, keys in self._bases
                for rel in HOME_RELATIVE
            ),
        )

    @functools.cached_property
    def _bases_pattern(self) -> re.Pattern[str] | None:
        if not self._bases:
            return None
        alternatives = "|".join(
            "/" + "/".join(_component_pattern(k) for k in keys) for _, keys in self._bases
        )
        return re.compile(f"(?P<base>{alternatives})(?P<rest>/.+)", re.DOTALL)

    def first_match(self, spellings: Iterable[str], *, write: bool) -> SensitiveLocation | None:
        for spelling in spellings:
            found = self._match(spelling, write)
            if found is not None:
                return found
        return None

    def _match(self, spelling: str, write: bool) -> SensitiveLocation | None:
        """The location one spelling lies in: text against the compiled tables, remembered per index."""
        memo_key = (spelling, write)
        if memo_key in self._matched:
            return self._matched[memo_key]
        found = self._match_now(spelling, write)
        if len(self._matched) >= _BELOW_MEMO_SIZE:
            self._matched.clear()
        self._matched[memo_key] = found
        return found

    def _match_now(self, spelling: str, write: bool) -> SensitiveLocation | None:
        table = self._write if write else self._read
        key = "/" + "/".join(path_keys(spelling))
        found = table.match(key)
        if found is not None or self._home is None or self._bases_pattern is None:
            return found
        based = self._bases_pattern.fullmatch(key)
        if based is None:
            return None
        relative = self._home.match(based.group("rest"))
        if relative is None:
            return None
        base = based.group("base")
        return SensitiveLocation(
            path_keys(base) + relative.parts, relative.reason, shown=f"{base}/{relative.shown}"
        )

    def first_below(self, spellings: Iterable[str], *, write: bool) -> SensitiveLocation | None:
        keyed = tuple(path_keys(s) for s in spellings)
        # A walk over every location (hundreds with the home-relative ones) that depends on the keys alone,
        # and recursive reads of the same folders ('.', 'src') come back on every line: remembered per index.
        memo_key = (keyed, write)
        if memo_key in self._below:
            return self._below[memo_key]
        found = next(
            (
                location
                for location in self.locations
                if (write or not location.writes_only) and any(location.is_below(keys) for keys in keyed)
            ),
            None,
        )
        if len(self._below) >= _BELOW_MEMO_SIZE:
            self._below.clear()
        self._below[memo_key] = found
        return found
