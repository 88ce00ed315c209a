"""What a killed commit leaves behind, and how the next start deals with it.

A set of changes (``commit_set.py``) writes a journal in the workspace folder after every new content and
backup is staged and fsynced, and before its first rename: ``.seepient-commit-<pid>-<hex>.journal``,
naming each step's file, its temp file and its backup. A process killed between the renames leaves the
journal; the next start finishes the set (every step not yet applied is applied) or, when that is not
possible any more, undoes it from the backups, so the set lands whole or not at all. Then the temp files
a dead commit left in the folders it touched are swept.

The journal lives in the workspace, where the model's commands can write, so it is never trusted on its
own: the caller passes what the action's intent record (in the audit log, out of the model's reach) says
each file held and will hold, and a step is finished or undone only when the file, its temp file or its
backup has exactly those contents. A forged or stale journal can therefore only lead to a state the
approved action itself would have produced.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from seepient.execution.commit import (
    JOURNAL_NAME,
    _closing_fds,
    _open_parent,
    _open_root,
    _Refused,
    _relative_parts,
    _remove_stale_temps,
    _rename_noreplace,
    _write_new_file,
)

JOURNAL_FORMAT = "seepient-commit-journal/1"
StepOp = Literal["create", "replace", "delete"]
_HASH_CHUNK = 1 << 20
_JOURNAL_LIMIT = 16 << 20


@dataclass(frozen=True)
class JournalStep:
    """One rename (or unlink) of a set: the file, its staged new content and its backup, by name."""

    path: str
    op: StepOp
    temp: str | None
    backup: str | None


@dataclass(frozen=True)
class Expected:
    """What the intent says one file held and will hold (SHA-256 hex; None for no file / not known)."""

    pre_image_sha256: str | None
    post_image_sha256: str | None
    delete: bool = False


def write_journal(root_fd: int, steps: Sequence[JournalStep]) -> str:
    """Write and fsync the journal (and the folder entry naming it) before the set's first rename."""
    name = f".seepient-commit-{os.getpid()}-{secrets.token_hex(8)}.journal"
    document = {
        "format": JOURNAL_FORMAT,
        "pid": os.getpid(),
        "steps": [{"path": s.path, "op": s.op, "temp": s.temp, "backup": s.backup} for s in steps],
    }
    data = json.dumps(document, ensure_ascii=False).encode("utf-8")
    _write_new_file(root_fd, name, data, 0o600)
    os.fsync(root_fd)
    return name


def remove_journal(root_fd: int, name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=root_fd)


def recover_commits(workspace: Path, pid: int, expected: Mapping[str, Expected]) -> list[str]:
    """Finish or undo every set process ``pid`` (now dead) left journalled in ``workspace``, then sweep the
    temp files dead commits left in the folders of ``expected``'s files. Returns one line per problem
    (a file someone changed since, so the set could be neither finished nor undone); nothing raises."""
    problems: list[str] = []
    try:
        root = Path(os.path.realpath(workspace))
        with _closing_fds() as fds:
            root_fd = _open_root(root)
            fds.append(root_fd)
            with os.scandir(root_fd) as entries:
                names = [
                    e.name for e in entries if (m := JOURNAL_NAME.match(e.name)) and int(m.group(1)) == pid
                ]
            for name in names:
                problems.extend(_recover_journal(root, root_fd, name, expected))
            _sweep(root, root_fd, expected)
    except (_Refused, OSError) as error:
        problems.append(f"{workspace}: {error}")
    return problems


@dataclass
class _Found:
    step: JournalStep
    parent_fd: int
    name: str
    state: Literal["applied", "pending", "conflict"]


def _recover_journal(root: Path, root_fd: int, name: str, expected: Mapping[str, Expected]) -> list[str]:
    steps = _read_journal(root_fd, name)
    if steps is None:
        # Cut off while being written: the renames start only after it is whole, so nothing was renamed.
        remove_journal(root_fd, name)
        return []
    with _closing_fds() as fds:
        found = []
        for step in steps:
            parts = _relative_parts(root, root, step.path)
            parent_fd = _open_parent(root, root_fd, parts, create=False, fds=fds, created=[])
            found.append(_Found(step, parent_fd, parts[-1], "conflict"))
        _lock_in_order(found)
        for item in found:
            item.state = _classify(item, expected.get(item.step.path))
        problems: list[str] = []
        if all(item.state != "conflict" for item in found):
            for item in found:
                if item.state == "pending":
                    _roll_forward(item)
        else:
            problems.extend(
                f"{item.step.path}: neither its old nor its new content, and not staged as approved; the set "
                "it belongs to was undone"
                for item in found
                if item.state == "conflict"
            )
            for item in found:
                if item.state == "applied":
                    problem = _roll_back(item, expected[item.step.path])
                    if problem:
                        problems.append(problem)
        for item in found:
            for leftover in (item.step.temp, item.step.backup):
                if leftover is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(leftover, dir_fd=item.parent_fd)
        for fd in {item.parent_fd for item in found}:
            with contextlib.suppress(OSError):
                os.fsync(fd)
    remove_journal(root_fd, name)
    return problems


def _read_journal(root_fd: int, name: str) -> list[JournalStep] | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=root_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _JOURNAL_LIMIT)
    finally:
        os.close(fd)
    try:
        document = json.loads(data)
        if document.get("format") != JOURNAL_FORMAT:
            return None
        steps = [
            JournalStep(path=item["path"], op=item["op"], temp=item.get("temp"), backup=item.get("backup"))
            for item in document["steps"]
        ]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    for step in steps:
        if step.op not in ("create", "replace", "delete") or not isinstance(step.path, str):
            return None
        for leftover in (step.temp, step.backup):
            # Only the commit helper's own temp names, in the file's own folder: never a path elsewhere.
            if leftover is not None and (
                not isinstance(leftover, str) or "/" in leftover or not _is_temp(leftover)
            ):
                return None
    return steps


def _is_temp(name: str) -> bool:
    from seepient.execution.commit import _TEMP_NAME

    return _TEMP_NAME.match(name) is not None


def _lock_in_order(found: list[_Found]) -> None:
    # The same lock, in the same (device, inode) order, as commit_set takes: no commit interleaves.
    directories: dict[tuple[int, int], int] = {}
    for item in found:
        info = os.fstat(item.parent_fd)
        item.parent_fd = directories.setdefault((info.st_dev, info.st_ino), item.parent_fd)
    for key in sorted(directories):
        fcntl.flock(directories[key], fcntl.LOCK_EX)


def _digest(parent_fd: int, name: str | None) -> str | None:
    """SHA-256 of a regular file in the folder, None when absent; '' for anything else (a link, a folder)."""
    if name is None:
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent_fd)
    except FileNotFoundError:
        return None
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        digest = hashlib.sha256()
        while chunk := os.read(fd, _HASH_CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _classify(item: _Found, expected: Expected | None) -> Literal["applied", "pending", "conflict"]:
    step = item.step
    if expected is None or (step.op == "delete") != expected.delete:
        return "conflict"
    now = _digest(item.parent_fd, item.name)
    if step.op == "delete":
        if now is None:
            return "applied"
        return "pending" if now == expected.pre_image_sha256 else "conflict"
    post = expected.post_image_sha256
    if post is None:
        return "conflict"
    if now == post:
        return "applied"
    before_ok = now is None if step.op == "create" else (now is not None and now == expected.pre_image_sha256)
    if before_ok and _digest(item.parent_fd, step.temp) == post:
        return "pending"
    return "conflict"


def _roll_forward(item: _Found) -> None:
    step, fd = item.step, item.parent_fd
    if step.op == "delete":
        os.unlink(item.name, dir_fd=fd)
    elif step.op == "create":
        assert step.temp is not None
        _rename_noreplace(fd, step.temp, item.name, step.path)
    else:
        assert step.temp is not None
        os.replace(step.temp, item.name, src_dir_fd=fd, dst_dir_fd=fd)


def _roll_back(item: _Found, expected: Expected) -> str | None:
    step, fd = item.step, item.parent_fd
    if step.op == "create":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(item.name, dir_fd=fd)
        return None
    if step.backup is not None and _digest(fd, step.backup) == expected.pre_image_sha256:
        os.rename(step.backup, item.name, src_dir_fd=fd, dst_dir_fd=fd)
        return None
    return f"{step.path}: its backup is gone, so its old content could not be put back"


def _sweep(root: Path, root_fd: int, expected: Mapping[str, Expected]) -> None:
    """Remove dead commits' temp files from each folder a file of ``expected`` is in (no link followed)."""
    folders: dict[tuple[int, int], int] = {}
    with _closing_fds() as fds:
        for path in expected:
            try:
                parts = _relative_parts(root, root, path)
                parent_fd = _open_parent(root, root_fd, parts, create=False, fds=fds, created=[])
            except (_Refused, OSError):
                continue
            info = os.fstat(parent_fd)
            folders.setdefault((info.st_dev, info.st_ino), parent_fd)
        for key in sorted(folders):
            fd = folders[key]
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                _remove_stale_temps(fd, root_fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
