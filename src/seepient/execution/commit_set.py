"""All-or-nothing commit of several ``FileChange``s (``apply_patch``), built from the exact commit helper's steps.

What is guaranteed, precisely:

* Nothing is written unless every change passes: each path is contained in the workspace (no ``..``, no
  symbolic link on the way or at the file), each file still has the bytes it was prepared against
  (``pre_image_sha256``; null means it must not exist), and every new content is fully written to a temp
  file and fsynced. A refusal or an I/O error in any of these leaves every file as it was.
* The renames that make the changes visible come last. Before them, every file that is replaced or deleted
  gets a backup: a hard link to its current inode (a copy where the file system has no hard links), in its
  own directory. If a rename, a deletion or a last-moment check (a file changed in place since it was
  hashed) fails part-way, the already applied changes are undone from those backups (a rename puts the old
  inode back, a created file is removed) and the answer says nothing was changed. Should the undoing itself
  fail, the answer is ``ERROR`` naming each file left changed and where its backup was kept.
* While it runs, the commit holds the lock of every directory it touches (taken in one global order, so two
  sets cannot deadlock), the same lock the single-file helper takes: no other Seepient commit interleaves.
* Each file is replaced by rename, so a crash (SIGKILL, power loss) at any point leaves every single file
  with its old or its new content, never a mixture (DESIGN §4 invariant 4). Across files, a crash between
  the first and the last rename leaves some files changed and others not; for that window a journal naming
  every step is written (and fsynced) before the first rename, and the next start finishes the set or
  undoes it (``commit_journal.py``). Until then the helper's sweep of stale temp files leaves that
  process's temp files and backups alone; afterwards they are swept like any other.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from seepient.execution.commit import (
    _apply,
    _closing_fds,
    _create_exclusively,
    _forget,
    _open_parent,
    _open_root,
    _read_current,
    _Refused,
    _relative_parts,
    _remove_stale_temps,
    _same_file,
    _sync_directories,
    _write_temp,
)
from seepient.execution.commit_journal import JournalStep, remove_journal, write_journal
from seepient.protocol.actions import FileChange
from seepient.protocol.errors import ExecutionError
from seepient.protocol.outcomes import CommitOutcome

_NO_HARD_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS)


@dataclass
class _Step:
    """One change of the set, with what was found on disk and what was staged for it."""

    change: FileChange
    display: str
    parent_fd: int
    name: str
    current: bytes | None = None
    info: os.stat_result | None = None
    new_bytes: bytes | None = None
    temp: str | None = None
    backup: str | None = None
    applied: bool = False

    @property
    def no_op(self) -> bool:
        return not self.change.delete and self.new_bytes == self.current


def commit_changes(workspace: Path, changes: Sequence[FileChange]) -> CommitOutcome:
    """Apply every change inside ``workspace``, or none of them and say why (``path`` names the culprit)."""
    if not changes:
        return CommitOutcome(code="INVALID", message="no changes to commit")
    display = ""
    try:
        root = Path(os.path.realpath(workspace))
        planned: list[tuple[FileChange, list[str]]] = []
        seen: set[str] = set()
        for change in changes:
            display = change.path
            parts = _relative_parts(workspace, root, change.path)
            display = "/".join(parts)
            if display in seen:
                raise _Refused("INVALID", f"{display} appears more than once in the set; nothing was written")
            seen.add(display)
            planned.append((change, parts))
        display = ""
        return _commit_set(root, planned)
    except _Refused as refused:
        return CommitOutcome(code=refused.code, message=refused.message, path=display)  # type: ignore[arg-type]
    except OSError as exc:
        detail = exc.strerror or str(exc)
        where = f"{display}: " if display else ""
        return CommitOutcome(code="ERROR", message=f"{where}{detail}; nothing was written", path=display)


class _Failed(ExecutionError):
    """A refusal with the path it concerns, carried out of the staged part."""

    def __init__(self, display: str, refused: _Refused) -> None:
        super().__init__(refused.message)
        self.display = display
        self.refused = refused


def _commit_set(root: Path, planned: list[tuple[FileChange, list[str]]]) -> CommitOutcome:
    root_fd = _open_root(root)
    created: list[tuple[int, str]] = []
    steps: list[_Step] = []
    with _closing_fds() as fds:
        fds.append(root_fd)
        try:
            for change, parts in planned:
                display = "/".join(parts)
                try:
                    parent_fd = _open_parent(
                        root,
                        root_fd,
                        parts,
                        create=change.pre_image_sha256 is None,
                        fds=fds,
                        created=created,
                    )
                except _Refused as refused:
                    raise _Failed(display, refused) from None
                steps.append(_Step(change, display, parent_fd, parts[-1]))
            directories = _lock_directories(steps)
            outcome = _stage_and_apply(steps, directories, root_fd)
        except _Failed as failed:
            _discard(steps, created)
            return CommitOutcome(
                code=failed.refused.code,  # type: ignore[arg-type]
                message=failed.refused.message,
                path=failed.display,
            )
        except BaseException:
            _discard(steps, created)
            raise
        _sync_directories({dir_fd for dir_fd, _ in created})
        return outcome


def _lock_directories(steps: list[_Step]) -> dict[tuple[int, int], int]:
    """Lock every directory the set touches once (two descriptors of one directory would block each other),
    in the order of (device, inode), so two sets locking overlapping directories cannot deadlock."""
    directories: dict[tuple[int, int], int] = {}
    for step in steps:
        info = os.fstat(step.parent_fd)
        key = (info.st_dev, info.st_ino)
        step.parent_fd = directories.setdefault(key, step.parent_fd)
    for key in sorted(directories):
        fcntl.flock(directories[key], fcntl.LOCK_EX)
    return directories


@contextlib.contextmanager
def _about(step: _Step) -> Iterator[None]:
    """Failures while staging ``step`` name it; nothing has been changed yet."""
    try:
        yield
    except _Refused as refused:
        raise _Failed(step.display, refused) from None
    except OSError as exc:
        message = f"{step.display}: {_reason(exc)}; nothing was written"
        raise _Failed(step.display, _Refused("ERROR", message)) from None


def _stage_and_apply(
    steps: list[_Step], directories: dict[tuple[int, int], int], root_fd: int
) -> CommitOutcome:
    for step in steps:
        with _about(step):
            _check(step)
    for fd in directories.values():
        _remove_stale_temps(fd, root_fd)
        # Until this set ends with its temp files gone, the single-file helper must not skip the scan here.
        _forget(os.fstat(fd))
    for step in steps:
        if step.no_op:
            continue
        with _about(step):
            if step.new_bytes is not None:
                step.temp = _write_temp(step.parent_fd, step.new_bytes, step.info)
            if step.info is not None:
                _back_up(step)
    applying = [step for step in steps if not step.no_op]
    # One rename is atomic by itself; only a set that spans several needs a journal for the window between.
    journal = None
    if len(applying) > 1:
        with _about(applying[0]):
            journal = write_journal(root_fd, [_journal_step(step) for step in applying])
    try:
        return _apply_all(steps, applying, directories)
    finally:
        if journal is not None:
            remove_journal(root_fd, journal)


def _journal_step(step: _Step) -> JournalStep:
    op = "delete" if step.change.delete else ("create" if step.info is None else "replace")
    return JournalStep(path=step.display, op=op, temp=step.temp, backup=step.backup)


def _apply_all(
    steps: list[_Step], applying: list[_Step], directories: dict[tuple[int, int], int]
) -> CommitOutcome:
    failing: _Step | None = None
    try:
        for step in applying:
            failing = step
            _apply_step(step)
    except BaseException as exc:
        left = _roll_back(steps)
        if left:
            _discard(steps, [])
            kept = "; ".join(f"{s.display} (its old content is kept as {s.backup})" for s in left)
            return CommitOutcome(
                code="ERROR",
                message=f"applying the set failed ({_reason(exc)}) and undoing it failed too: changed: {kept}",
                path=left[0].display,
            )
        if isinstance(exc, _Failed):
            raise
        if isinstance(exc, OSError):
            where = failing.display if failing else ""
            raise _Failed(where, _Refused("ERROR", f"{where}: {_reason(exc)}; nothing was changed")) from None
        raise
    for step in steps:
        if step.backup is not None:
            with contextlib.suppress(OSError):
                os.unlink(step.backup, dir_fd=step.parent_fd)
    _sync_directories(set(directories.values()))
    return CommitOutcome(code="OK", message=_summary(steps), path="")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, _Failed):
        return exc.refused.message
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return type(exc).__name__


def _check(step: _Step) -> None:
    """The file as it is now against what the change was prepared for; stages the new bytes."""
    change, display = step.change, step.display
    step.current, step.info = _read_current(step.parent_fd, step.name, display)
    if change.pre_image_sha256 is None:
        if step.current is not None:
            raise _Refused(
                "FILE_CHANGED",
                f"{display} exists now but the change was prepared for a new file; nothing was written",
            )
    else:
        if step.current is None:
            raise _Refused("FILE_CHANGED", f"{display} no longer exists; nothing was written")
        if hashlib.sha256(step.current).hexdigest() != change.pre_image_sha256.lower():
            raise _Refused(
                "FILE_CHANGED", f"{display} changed since the change was prepared; nothing was written"
            )
    if not change.delete:
        step.new_bytes, _ = _apply(change, step.current, display)


def _back_up(step: _Step) -> None:
    """Keep the file's current inode under a second name until the set has landed."""
    assert step.info is not None and step.current is not None
    now = os.stat(step.name, dir_fd=step.parent_fd, follow_symlinks=False)
    if not _same_file(step.info, now):
        raise _Refused("FILE_CHANGED", f"{step.display} changed while the set was being prepared")
    backup = f".seepient-commit-{os.getpid()}-{secrets.token_hex(8)}.tmp"
    try:
        os.link(
            step.name, backup, src_dir_fd=step.parent_fd, dst_dir_fd=step.parent_fd, follow_symlinks=False
        )
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        step.backup = _write_temp(step.parent_fd, step.current, step.info)
    else:
        step.backup = backup
        # A new link moves the inode's ctime: the snapshot that the last check compares against is taken
        # again, through the backup name, which only this commit knows.
        linked = os.stat(backup, dir_fd=step.parent_fd, follow_symlinks=False)
        if (linked.st_ino, linked.st_size, linked.st_mtime_ns) != (
            step.info.st_ino,
            step.info.st_size,
            step.info.st_mtime_ns,
        ):
            raise _Refused("FILE_CHANGED", f"{step.display} changed while the set was being prepared")
        step.info = linked


def _apply_step(step: _Step) -> None:
    fd, name, display = step.parent_fd, step.name, step.display
    if step.info is None:
        assert step.temp is not None
        try:
            _create_exclusively(fd, step.temp, name, display)
        except _Refused as refused:
            raise _Failed(display, refused) from None
        step.temp = None
        step.applied = True
        return
    try:
        now = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        raise _Failed(display, _Refused("FILE_CHANGED", f"{display} was removed meanwhile")) from None
    if step.backup is not None and not _same_file(step.info, now):
        raise _Failed(display, _Refused("FILE_CHANGED", f"{display} changed while the set was being written"))
    if step.change.delete:
        os.unlink(name, dir_fd=fd)
    else:
        assert step.temp is not None
        os.replace(step.temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        step.temp = None
    step.applied = True


def _roll_back(steps: list[_Step]) -> list[_Step]:
    """Undo the applied steps, newest first; the steps that could not be undone."""
    left: list[_Step] = []
    for step in reversed(steps):
        if not step.applied:
            continue
        try:
            if step.info is None:
                os.unlink(step.name, dir_fd=step.parent_fd)
            else:
                assert step.backup is not None
                os.rename(step.backup, step.name, src_dir_fd=step.parent_fd, dst_dir_fd=step.parent_fd)
                step.backup = None
            step.applied = False
        except OSError:
            left.append(step)
    return left


def _discard(steps: list[_Step], created: list[tuple[int, str]]) -> None:
    """Remove what a failed set staged: temp files, backups no longer needed, directories it made."""
    for step in steps:
        for name in (step.temp, None if step.applied else step.backup):
            if name is not None:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=step.parent_fd)
    for dir_fd, name in reversed(created):
        with contextlib.suppress(OSError):
            os.rmdir(name, dir_fd=dir_fd)


def _summary(steps: list[_Step]) -> str:
    words = []
    for step in steps:
        if step.change.delete:
            words.append(f"deleted {step.display}")
        elif step.info is None:
            words.append(f"created {step.display}")
        elif step.no_op:
            words.append(f"{step.display} unchanged")
        else:
            words.append(f"updated {step.display}")
    return "; ".join(words)
