"""The exact commit helper: applies one ``FileChange`` only if the file still has the bytes it was prepared
against, and replaces it atomically so a crash leaves the old or the new content (DESIGN §4 invariant 4).

Also the ``seepient-fs-commit`` console script: one JSON request on stdin, one ``CommitOutcome`` on stdout.
The worker image carries this module with ``nofollow.py`` and nothing else of execution (``scheduler/image.py``),
which is why it stays one file of a little over 600 lines.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import secrets
import stat
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ValidationError, field_validator

from seepient.execution.nofollow import is_symlink_at
from seepient.protocol.actions import FileChange
from seepient.protocol.errors import RefusalError
from seepient.protocol.frozen import deferred_config
from seepient.protocol.outcomes import CommitOutcome

_TEMP_NAME = re.compile(r"^\.seepient-commit-(\d+)-[0-9a-f]{16}\.tmp$")
#: The journal a set of changes writes in the workspace folder before its renames (``commit_journal.py``).
JOURNAL_NAME = re.compile(r"^\.seepient-commit-(\d+)-[0-9a-f]{16}\.journal$")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_RENAME_NOREPLACE = 1
# Scanning a directory for stale temp files costs time in proportion to its size, on every commit. A
# process therefore remembers, per directory it committed into, the directory's mtime and ctime right after
# its own commit finished with no temp file left behind. Every temp file is created and removed under the
# directory's flock, so a helper that died holding one must have changed the directory after that point,
# and the next commit sees a different mtime or ctime and scans. The one blind spot is a timestamp that
# did not move because the kernel stamps with a coarse clock (a few ms per tick): a helper killed within
# that same tick. The rescan interval bounds how long its temp file can survive that, and a process without
# a memo for the directory (every run of seepient-fs-commit) always scans.
_RESCAN_AFTER_S = 1.0
_SCAN_MEMO_LIMIT = 1024
_scan_memo: dict[tuple[int, int], tuple[int, int, float]] = {}
_scan_memo_lock = threading.Lock()


class CommitRequest(BaseModel):
    """What ``seepient-fs-commit`` reads from stdin."""

    model_config = deferred_config(frozen=True, extra="forbid")

    workspace: str
    change: FileChange

    @field_validator("workspace")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not os.path.isabs(value):
            raise ValueError(f"workspace must be an absolute path, got {value!r}")
        return value


class _Refused(RefusalError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _relative_parts(workspace: Path, root: Path, raw: str) -> list[str]:
    if "\0" in raw:
        raise _Refused("INVALID", "the path contains a NUL byte")
    if ".." in raw.split("/"):
        raise _Refused("OUTSIDE_WORKSPACE", f"{raw}: '..' is not allowed in a committed path")
    candidate = raw
    if os.path.isabs(raw):
        # An absolute path may be spelled under the workspace as given or under its resolved form.
        for base in (Path(os.path.abspath(workspace)), root):
            if Path(raw).is_relative_to(base):
                candidate = str(Path(raw).relative_to(base))
                break
        else:
            raise _Refused("OUTSIDE_WORKSPACE", f"{raw} is outside the workspace {root}")
    parts = [part for part in candidate.split("/") if part not in ("", ".")]
    if not parts:
        raise _Refused("INVALID", f"{raw!r} names the workspace itself, not a file")
    return parts


@contextlib.contextmanager
def _closing_fds() -> Iterator[list[int]]:
    fds: list[int] = []
    try:
        yield fds
    finally:
        for fd in reversed(fds):
            with contextlib.suppress(OSError):
                os.close(fd)


def _open_parent(
    root: Path,
    root_fd: int,
    parts: list[str],
    *,
    create: bool,
    fds: list[int],
    created: list[tuple[int, str]],
) -> int:
    """The directory that will hold the file, reached without following any symlink.

    Containment is decided on the fully resolved parent; the walk then refuses every symlink, so a
    directory swapped for a symlink between that check and this walk cannot redirect the write.
    """
    if len(parts) == 1:
        # The file sits in the workspace directory itself, already open without a walk.
        return root_fd
    requested_parent = root.joinpath(*parts[:-1])
    resolved_parent = Path(os.path.realpath(requested_parent))
    if resolved_parent != root and not resolved_parent.is_relative_to(root):
        raise _Refused(
            "OUTSIDE_WORKSPACE",
            f"{'/'.join(parts)}: its directory resolves to {resolved_parent}, outside the workspace",
        )
    current = root_fd
    for name in resolved_parent.relative_to(root).parts:
        try:
            next_fd = os.open(name, _DIR_FLAGS, dir_fd=current)
        except FileNotFoundError:
            if not create:
                raise _Refused(
                    "FILE_CHANGED", f"{'/'.join(parts)}: the directory {name} no longer exists"
                ) from None
            try:
                os.mkdir(name, 0o777, dir_fd=current)
                created.append((current, name))
            except FileExistsError:
                pass  # made by a concurrent commit meanwhile; the no-follow open below still vets it
            next_fd = os.open(name, _DIR_FLAGS, dir_fd=current)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and is_symlink_at(current, name):
                raise _Refused(
                    "OUTSIDE_WORKSPACE",
                    f"{'/'.join(parts)}: {name} became a symbolic link after the path was checked",
                ) from None
            if exc.errno == errno.ENOTDIR:
                raise _Refused("INVALID", f"{'/'.join(parts)}: {name} is not a directory") from None
            raise
        fds.append(next_fd)
        current = next_fd
    return current


def _read_current(parent_fd: int, name: str, display: str) -> tuple[bytes | None, os.stat_result | None]:
    try:
        # O_NONBLOCK keeps a FIFO planted at the path from hanging the commit; it is refused below.
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent_fd)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Refused(
                "OUTSIDE_WORKSPACE", f"{display} is a symbolic link; refusing to write through it"
            ) from None
        raise
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise _Refused("INVALID", f"{display} is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise _Refused("INVALID", f"{display} is not a regular file")
        # Sized to the file, an unchanged file arrives in one right-sized buffer (joining a single chunk
        # copies nothing); a fixed large buffer cost an allocation and a copy per commit. Reading on until
        # EOF still takes in a file that grew since the fstat, which the pre-image check then refuses.
        chunks = []
        while chunk := os.read(fd, info.st_size + 1):
            chunks.append(chunk)
        return b"".join(chunks), info
    finally:
        os.close(fd)


def _utf8(text: str, display: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise _Refused(
            "INVALID",
            f"{display}: {what} contains a lone surrogate, which UTF-8 cannot encode; send valid Unicode text",
        ) from None


def _apply(change: FileChange, current: bytes | None, display: str) -> tuple[bytes, int]:
    """The new content, and how many leading bytes it certainly shares with ``current``."""
    if change.new_content is not None:
        return _utf8(change.new_content, display, "new_content"), 0
    if current is None:
        raise _Refused(
            "INVALID", f"{display}: edit blocks need an existing file; send new_content to create it"
        )
    # ASCII is valid UTF-8 and checking for it allocates nothing; anything else is decoded to be sure.
    if not current.isascii():
        try:
            current.decode("utf-8")
        except UnicodeDecodeError:
            raise _Refused(
                "INVALID", f"{display} is not UTF-8 text; edit blocks cannot apply, send new_content"
            ) from None
    # The edits run on the UTF-8 bytes, not on decoded text: UTF-8 is self-synchronising (an encoded
    # character never starts with a continuation byte), so an encoded search text matches the valid UTF-8
    # file at exactly the places the text would match the decoded file, overlaps and replace_all included;
    # and this spares a decode of the file and an encode of the result, two full copies per commit.
    data = current
    # Each edit leaves the bytes before its match alone, so everything before the earliest match is shared.
    unchanged = len(current)
    for number, edit in enumerate(change.edits or (), start=1):
        if edit.search == "":
            raise _Refused("INVALID", f"{display}: edit block {number} has an empty search text")
        search = _utf8(edit.search, display, f"the search text of edit block {number}")
        replace = _utf8(edit.replace, display, f"the replacement of edit block {number}")
        first = data.find(search)
        if first < 0:
            raise _Refused(
                "NOT_FOUND", f"{display}: the search text of edit block {number} does not occur in the file"
            )
        unchanged = min(unchanged, first)
        if edit.replace_all:
            data = data.replace(search, replace)
        elif data.find(search, first + 1) >= 0:
            raise _Refused(
                "NOT_UNIQUE",
                f"{display}: the search text of edit block {number} occurs more than once; add context or set replace_all",
            )
        else:
            # Slices of a memoryview copy nothing, so the new content is built in a single copy.
            view = memoryview(data)
            data = b"".join((view[:first], replace, view[first + len(search) :]))
    return data, unchanged


def _remove_stale_temps(parent_fd: int, root_fd: int | None = None) -> None:
    """Temp files whose writer died (a crash, SIGKILL) before it renamed or removed them.

    Those of a writer whose journal is still in the workspace folder ``root_fd`` are kept: they are the new
    contents and backups of a set killed between its renames, which the next start finishes or undoes.
    """
    with os.scandir(parent_fd) as entries:
        names = [entry.name for entry in entries if _TEMP_NAME.match(entry.name)]
    journaled: set[int] | None = None
    for name in names:
        match = _TEMP_NAME.match(name)
        assert match is not None
        pid = int(match.group(1))
        try:
            os.kill(pid, 0)
            continue
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        if root_fd is not None:
            if journaled is None:
                journaled = journal_pids(root_fd)
            if pid in journaled:
                continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=parent_fd)


def journal_pids(root_fd: int) -> set[int]:
    """The processes that left a set's journal in the workspace folder."""
    with os.scandir(root_fd) as entries:
        found = (JOURNAL_NAME.match(entry.name) for entry in entries)
        return {int(match.group(1)) for match in found if match is not None}


def _scan_due(directory: os.stat_result) -> float | None:
    """When the last scan of this directory for stale temps was, or None if it must be scanned now."""
    with _scan_memo_lock:
        memo = _scan_memo.get((directory.st_dev, directory.st_ino))
    if memo is None:
        return None
    mtime_ns, ctime_ns, scanned_at = memo
    if (mtime_ns, ctime_ns) != (directory.st_mtime_ns, directory.st_ctime_ns):
        return None
    if time.monotonic() - scanned_at >= _RESCAN_AFTER_S:
        return None
    return scanned_at


def _remember_clean(parent_fd: int, scanned_at: float) -> None:
    # Called after the rename: the change has landed, so a failure here may only cost the memo.
    try:
        after = os.fstat(parent_fd)
    except OSError:
        return
    key = (after.st_dev, after.st_ino)
    with _scan_memo_lock:
        if key not in _scan_memo and len(_scan_memo) >= _SCAN_MEMO_LIMIT:
            del _scan_memo[next(iter(_scan_memo))]
        _scan_memo[key] = (after.st_mtime_ns, after.st_ctime_ns, scanned_at)


def _forget(directory: os.stat_result) -> None:
    with _scan_memo_lock:
        _scan_memo.pop((directory.st_dev, directory.st_ino), None)


def _write_temp(parent_fd: int, data: bytes, original: os.stat_result | None, new_mode: int = 0o644) -> str:
    name = f".seepient-commit-{os.getpid()}-{secrets.token_hex(8)}.tmp"
    # A new file is created with ``new_mode`` and the kernel applies the umask; an existing file's mode is copied.
    _write_new_file(parent_fd, name, data, 0o600 if original is not None else new_mode, like=original)
    return name


def _write_new_file(
    dir_fd: int, name: str, data: bytes, mode: int, *, like: os.stat_result | None = None
) -> None:
    """Create ``name`` in ``dir_fd`` exclusively and never through a symlink, with ``mode`` or with the owner
    and mode of the file ``like`` describes, then write ``data`` whole and fsync it. A failure leaves no file."""
    fd = os.open(
        name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd
    )
    try:
        if like is not None:
            if (like.st_uid, like.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(PermissionError):
                    os.fchown(fd, like.st_uid, like.st_gid)
            # The copy is an fchmod even when the mode may already match: what the creation mode became
            # depends on the umask, which cannot be read without setting it under every other thread, and
            # the call costs ~1 µs.
            os.fchmod(fd, stat.S_IMODE(like.st_mode))
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise
    os.close(fd)


def _same_file(before: os.stat_result, after: os.stat_result) -> bool:
    keys = ("st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns", "st_mode")
    return all(getattr(before, key) == getattr(after, key) for key in keys)


def _create_exclusively(parent_fd: int, temp: str, name: str, display: str) -> bool:
    """Give the fully written temp file its final name, failing if that name appeared meanwhile.

    True when no temp name is left behind.
    """
    try:
        os.link(temp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd, follow_symlinks=False)
    except FileExistsError:
        raise _Refused(
            "FILE_CHANGED", f"{display} was created by someone else after the change was prepared"
        ) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise
        _rename_noreplace(parent_fd, temp, name, display)
        return True
    # The file has landed; a temp name that cannot be removed now is swept up by the next commit here.
    try:
        os.unlink(temp, dir_fd=parent_fd)
    except OSError:
        return False
    return True


def _rename_noreplace(parent_fd: int, temp: str, name: str, display: str) -> None:
    # For file systems without hard links: renameat2(RENAME_NOREPLACE) is atomic and exclusive too.
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        raise OSError(errno.ENOSYS, "this file system has no hard links and libc has no renameat2")
    result = renameat2(parent_fd, os.fsencode(temp), parent_fd, os.fsencode(name), _RENAME_NOREPLACE)
    if result != 0:
        code = ctypes.get_errno()
        if code == errno.EEXIST:
            raise _Refused(
                "FILE_CHANGED", f"{display} was created by someone else after the change was prepared"
            )
        raise OSError(code, os.strerror(code))


class ExpectedImage(NamedTuple):
    """One file a change may alter: its workspace-relative path, the SHA-256 it was prepared against, and the
    SHA-256 it will hold once the change lands (None when that cannot be known now)."""

    path: str
    pre_image_sha256: str | None
    post_image_sha256: str | None
    delete: bool


def expected_images(workspace: Path, changes: Sequence[FileChange]) -> tuple[ExpectedImage, ...]:
    """What each change would leave, worked out without writing anything (the intent of a file change names
    it, so that after a crash each file can be told to hold its old content, its new content, or neither).

    Full new content is hashed as given; edit blocks are applied in memory to the file as it is now, read
    without following symbolic links. A file that no longer holds its pre-image gets no post-image: the
    commit will refuse to touch it.
    """
    root = Path(os.path.realpath(workspace))
    images = []
    for change in changes:
        path, post = change.path, None
        try:
            parts = _relative_parts(workspace, root, change.path)
            path = "/".join(parts)
            if change.new_content is not None:
                post = hashlib.sha256(_utf8(change.new_content, path, "new_content")).hexdigest()
            elif not change.delete:
                post = _edited_digest(root, parts, change, path)
        except (_Refused, OSError):
            post = None
        images.append(ExpectedImage(path, change.pre_image_sha256, post, change.delete))
    return tuple(images)


def _edited_digest(root: Path, parts: list[str], change: FileChange, display: str) -> str | None:
    with _closing_fds() as fds:
        root_fd = _open_root(root)
        fds.append(root_fd)
        parent_fd = _open_parent(root, root_fd, parts, create=False, fds=fds, created=[])
        current, _ = _read_current(parent_fd, parts[-1], display)
    if current is None or change.pre_image_sha256 is None:
        return None
    if hashlib.sha256(current).hexdigest() != change.pre_image_sha256.lower():
        return None
    new_bytes, _ = _apply(change, current, display)
    return hashlib.sha256(new_bytes).hexdigest()


def commit_change(workspace: Path, change: FileChange, *, new_file_mode: int = 0o644) -> CommitOutcome:
    """Apply ``change`` inside ``workspace`` exactly, or touch nothing and say why. A file the change creates
    gets ``new_file_mode`` (less the umask): 0o600 for Seepient's own state, such as memory notes."""
    display = change.path
    if change.delete:
        return CommitOutcome(
            code="INVALID",
            message=f"{display}: a deletion is committed as part of a set (commit_files)",
            path=display,
        )
    try:
        # Resolving the workspace costs an lstat per component of its path, on every commit. Only an
        # absolute path (to be placed under it) and a path through directories (to be contained in it) need
        # the resolved form; a bare file name lands in the workspace opened as given, which the kernel
        # resolves within that same open.
        needs_resolving = os.path.isabs(change.path) or "/" in change.path
        root = Path(os.path.realpath(workspace)) if needs_resolving else Path(workspace)
        parts = _relative_parts(workspace, root, change.path)
        display = "/".join(parts)
        return _commit(root, parts, change, display, new_file_mode)
    except _Refused as refused:
        return CommitOutcome(code=refused.code, message=refused.message, path=display)  # type: ignore[arg-type]
    except OSError as exc:
        detail = exc.strerror or str(exc)
        return CommitOutcome(code="ERROR", message=f"{display}: {detail}; nothing was written", path=display)


def _sync_directories(directory_fds: set[int]) -> None:
    # Past the rename the change has landed, and an outcome other than OK would claim that nothing was
    # written; so a failing directory fsync costs durability against power loss, never the answer.
    for fd in directory_fds:
        with contextlib.suppress(OSError):
            os.fsync(fd)


def _open_root(root: Path) -> int:
    """The workspace folder, opened; a missing one is refused, since nothing may be created outside it."""
    try:
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise _Refused("INVALID", f"the workspace {root} does not exist") from None
    except NotADirectoryError:
        raise _Refused("INVALID", f"the workspace {root} is not a directory") from None


def _commit(
    root: Path, parts: list[str], change: FileChange, display: str, new_file_mode: int = 0o644
) -> CommitOutcome:
    root_fd = _open_root(root)
    created: list[tuple[int, str]] = []
    with _closing_fds() as fds:
        fds.append(root_fd)
        try:
            parent_fd = _open_parent(
                root, root_fd, parts, create=change.pre_image_sha256 is None, fds=fds, created=created
            )
            # Commits into one directory take turns, so two changes prepared against the same bytes cannot
            # both pass the pre-image check and the second silently overwrite the first.
            fcntl.flock(parent_fd, fcntl.LOCK_EX)
            outcome = _commit_in(parent_fd, parts[-1], change, display, root_fd, new_file_mode)
        except BaseException:
            for dir_fd, name in reversed(created):
                with contextlib.suppress(OSError):
                    os.rmdir(name, dir_fd=dir_fd)
            raise
        _sync_directories({dir_fd for dir_fd, _ in created})
        return outcome


def _commit_in(
    parent_fd: int, name: str, change: FileChange, display: str, root_fd: int, new_file_mode: int = 0o644
) -> CommitOutcome:
    current, info = _read_current(parent_fd, name, display)
    if change.pre_image_sha256 is None:
        if current is not None:
            raise _Refused(
                "FILE_CHANGED",
                f"{display} exists now but the change was prepared for a new file; nothing was written",
            )
    elif current is None:
        raise _Refused("FILE_CHANGED", f"{display} no longer exists; nothing was written")
    # The edits are applied before the pre-image is hashed (applying writes nothing) because where the first
    # one lands tells how much of the file the new content starts with: the hash of that shared prefix is
    # taken once and carried into both the pre-image and the post-image hash. A failed edit is reported
    # only after the hash, so a file that changed since preparation still says FILE_CHANGED first.
    try:
        new_bytes, unchanged = _apply(change, current, display)
    except _Refused as refused:
        failed: _Refused | None = refused
        new_bytes, unchanged = b"", 0
    else:
        failed = None
    post_hash = hashlib.sha256()
    if current is not None:
        assert change.pre_image_sha256 is not None
        view = memoryview(current)
        post_hash.update(view[:unchanged])
        pre_hash = post_hash.copy()
        pre_hash.update(view[unchanged:])
        pre = pre_hash.hexdigest()
        if pre != change.pre_image_sha256.lower():
            raise _Refused(
                "FILE_CHANGED", f"{display} changed since the change was prepared; nothing was written"
            )
        if failed is None and new_bytes == current:
            return CommitOutcome(
                code="OK", message=f"{display} already has this content", path=display, post_image_sha256=pre
            )
    if failed is not None:
        raise failed
    post_hash.update(memoryview(new_bytes)[unchanged:])
    post = post_hash.hexdigest()
    directory = os.fstat(parent_fd)
    scanned_at = _scan_due(directory)
    if scanned_at is None:
        _remove_stale_temps(parent_fd, root_fd)
        scanned_at = time.monotonic()
    # Until this commit ends with its temp file gone, the memo must not vouch for the directory.
    _forget(directory)
    temp = _write_temp(parent_fd, new_bytes, info, new_file_mode)
    temp_gone = True
    try:
        if info is None:
            temp_gone = _create_exclusively(parent_fd, temp, name, display)
        else:
            # The last look before the rename: an in-place write or a swap since the hash was taken shows
            # up as a different inode, size, mtime or ctime.
            try:
                now = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            except FileNotFoundError:
                raise _Refused(
                    "FILE_CHANGED", f"{display} was removed while the change was being written"
                ) from None
            if not _same_file(info, now):
                raise _Refused(
                    "FILE_CHANGED",
                    f"{display} changed while the change was being written; nothing was written",
                )
            os.replace(temp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=parent_fd)
        raise
    _sync_directories({parent_fd})
    if temp_gone:
        _remember_clean(parent_fd, scanned_at)
    verb = "created" if info is None else "updated"
    return CommitOutcome(code="OK", message=f"{display} {verb}", path=display, post_image_sha256=post)


def _describe(error: ValueError, raw: bytes) -> str:
    if not raw.strip():
        return "stdin was empty"
    if not isinstance(error, ValidationError):
        return str(error)
    problems = []
    for item in error.errors(include_url=False):
        if item["type"] == "json_invalid":
            problems.append(f"stdin is not valid JSON ({item.get('ctx', {}).get('error', item['msg'])})")
            continue
        where = ".".join(str(part) for part in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


def main() -> int:
    """``seepient-fs-commit``: exit 0 when the change landed, 1 when it was refused, 2 for a malformed request."""
    raw = sys.stdin.buffer.read()
    try:
        request = CommitRequest.model_validate_json(raw)
    except ValueError as exc:
        message = (
            f"malformed request: {_describe(exc, raw)}. Send one JSON object on stdin: "
            '{"workspace": "/absolute/root", "change": {FileChange}}'
        )
        sys.stderr.write(f"seepient-fs-commit: {message}\n")
        sys.stdout.write(CommitOutcome(code="INVALID", message=message).model_dump_json() + "\n")
        return 2
    outcome = commit_change(Path(request.workspace), request.change)
    sys.stdout.write(outcome.model_dump_json() + "\n")
    if not outcome.ok:
        sys.stderr.write(f"seepient-fs-commit: {outcome.code}: {outcome.message}\n")
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    sys.exit(main())
