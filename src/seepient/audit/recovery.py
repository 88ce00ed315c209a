"""Interrupted actions: intents whose process died before their outcome was recorded, found cheaply at every
start, and what the files they name hold now.

Finding them must not cost a walk of the whole log at each start, so the scan remembers where it stopped
(``<log>.open-intents``: the offset, the entry that ends there, and the intents still open) and reads
only what was appended since. The file is a cache: when it is missing, damaged or does not match the log
(the line it names is not there), the scan starts from the beginning. Verification never relies on it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from seepient.audit._chain import ChainedEntry, decode_line
from seepient.audit.liveness import writer_alive
from seepient.audit.log_files import line_ending_at
from seepient.audit.record import (
    INTENT_TYPE,
    OUTCOME_TYPE,
    FileState,
    FileStateName,
    IntentRecord,
    Writer,
)

CACHE_FORMAT = "seepient-audit-open-intents/1"
_INTENT_MARK = b'"type":"intent"'
_OUTCOME_MARK = b'"type":"outcome"'
_HASH_CHUNK = 1 << 20


def cache_path_for(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + ".open-intents")


def writer_gone(writer: Writer) -> bool:
    """True only when the writer is certainly no longer running (not when this machine cannot tell)."""
    return writer_alive(writer) is False


@dataclass(frozen=True)
class OpenIntent:
    """An intent with no outcome in the log: its entry and the record."""

    seq: int
    offset: int
    length: int
    record: IntentRecord


@dataclass
class IntentScan:
    """The intents open at the end of the log's last whole line, and where that line ends."""

    open: list[OpenIntent] = field(default_factory=list)
    end: int = 0
    seq: int = 0
    hash: str | None = None
    torn: bool = False
    """The log ends with part of a line (a writer killed mid-append)."""
    cached: bytes = b""
    """The cache file as this scan found it (rewritten only when the place or the open intents moved)."""

    def remember(self, log_path: Path, still_open: list[OpenIntent]) -> None:
        """Keep this scan's place for the next one (best effort: a lost cache only costs a longer scan)."""
        if self.hash is None:
            return
        document = {
            "format": CACHE_FORMAT,
            "offset": self.end,
            "seq": self.seq,
            "hash": self.hash,
            "open": [{"seq": i.seq, "offset": i.offset, "length": i.length} for i in still_open],
        }
        data = json.dumps(document).encode()
        if data == self.cached:
            return
        path = cache_path_for(log_path)
        temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            os.replace(temp, path)
        except OSError:
            with contextlib.suppress(OSError):
                temp.unlink()


def scan_open_intents(log_path: Path) -> IntentScan:
    """Every intent of the log at ``log_path`` that has no outcome yet (alive writers' ones included)."""
    try:
        fd = os.open(log_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return IntentScan()
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return IntentScan()
        return _scan(fd, log_path)
    finally:
        os.close(fd)


def _scan(fd: int, log_path: Path) -> IntentScan:
    size = os.fstat(fd).st_size
    scan, pending = _resume(fd, size, cache_path_for(log_path))
    offset = scan.end
    last: bytes | None = None
    with os.fdopen(os.dup(fd), "rb") as stream:
        stream.seek(offset)
        for line in stream:
            if not line.endswith(b"\n"):
                scan.torn = True  # a torn last line: the caller seals it
                break
            start, offset = offset, offset + len(line)
            last = line
            if _INTENT_MARK in line:
                found = _fields(line)
                if found is not None and found.get("type") == INTENT_TYPE:
                    action = found.get("action")
                    action_id = action.get("id") if isinstance(action, dict) else None
                    if isinstance(action_id, str) and action_id not in pending:
                        pending[action_id] = (found.get("seq"), start, line)
            elif _OUTCOME_MARK in line:
                found = _fields(line)
                if found is not None and found.get("type") == OUTCOME_TYPE:
                    action_id = found.get("action_id")
                    if isinstance(action_id, str):
                        pending.pop(action_id, None)
    scan.end = offset
    if last is not None:
        tail = _fields(last)
        if tail is not None and isinstance(tail.get("seq"), int) and isinstance(tail.get("hash"), str):
            scan.seq, scan.hash = tail["seq"], tail["hash"]
    scan.open = sorted(
        (intent for intent in (_open_intent(*found) for found in pending.values()) if intent is not None),
        key=lambda intent: intent.seq,
    )
    return scan


def _resume(fd: int, size: int, cache: Path) -> tuple[IntentScan, dict[str, tuple[Any, int, bytes]]]:
    """Where the last scan stopped and the intents it left open, if its cache still matches the log."""
    fresh: tuple[IntentScan, dict[str, tuple[Any, int, bytes]]] = (IntentScan(), {})
    try:
        raw = cache.read_bytes()
        document = json.loads(raw)
        offset, seq, digest = document["offset"], document["seq"], document["hash"]
        listed = document["open"]
        if document.get("format") != CACHE_FORMAT or not (0 < offset <= size):
            return fresh
    except (OSError, ValueError, KeyError, TypeError):
        return fresh
    entry = _entry_ending_at(fd, offset)
    if entry is None or (entry.seq, entry.hash) != (seq, digest):
        return fresh
    pending: dict[str, tuple[Any, int, bytes]] = {}
    try:
        for item in listed:
            start, length = int(item["offset"]), int(item["length"])
            line = os.pread(fd, length, start)
            found = _fields(line)
            if found is None or found.get("type") != INTENT_TYPE or found.get("seq") != item["seq"]:
                return fresh
            pending[found["action"]["id"]] = (found["seq"], start, line)
    except (OSError, ValueError, KeyError, TypeError):
        return fresh
    return IntentScan(end=offset, seq=seq, hash=digest, cached=raw), pending


def _entry_ending_at(fd: int, offset: int) -> ChainedEntry | None:
    """The entry whose line ends just before ``offset``."""
    line = line_ending_at(fd, offset)
    if line is None:
        return None
    decoded = decode_line(line[:-1], 0)
    return decoded if isinstance(decoded, ChainedEntry) else None


def _fields(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _open_intent(seq: Any, offset: int, line: bytes) -> OpenIntent | None:
    found = _fields(line)
    if found is None or not isinstance(seq, int):
        return None
    try:
        record = IntentRecord.from_entry(found)
    except ValidationError:
        return None  # not an intent Seepient wrote; verification says what is wrong with it
    return OpenIntent(seq=seq, offset=offset, length=len(line), record=record)


def file_states(intent: IntentRecord) -> tuple[FileState, ...]:
    """What each file an intent names holds now: its new content, its pre-image, neither, or nothing readable.

    A deletion's new content is no file; a creation's pre-image is no file. Only hashes are compared, and
    a symbolic link at the file's own name is not followed (it counts as neither).
    """
    states = []
    for images in intent.files:
        digest, readable = _file_digest(os.path.join(intent.workspace, images.path))
        state: FileStateName
        if not readable:
            state = "unreadable"
        elif images.delete:
            state = "new" if digest is None else ("old" if digest == images.pre_image_sha256 else "neither")
        elif digest is not None and digest == images.post_image_sha256:
            state = "new"
        elif digest == images.pre_image_sha256:
            state = "old"  # both None: a file to be created that is still absent
        else:
            state = "neither"
        states.append(FileState(path=images.path, state=state))
    return tuple(states)


def _file_digest(path: str) -> tuple[str | None, bool]:
    """SHA-256 of the regular file at ``path`` (None when absent, "" for something that is not a regular file),
    and whether it could be judged at all."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, True
    except OSError:
        if os.path.islink(path):
            return "", True  # a symbolic link holds neither content
        return None, False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "", True
        digest = hashlib.sha256()
        while chunk := os.read(fd, _HASH_CHUNK):
            digest.update(chunk)
        return digest.hexdigest(), True
    except OSError:
        return None, False
    finally:
        os.close(fd)
