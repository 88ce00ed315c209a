"""The agent's memory folders on disk: reading, listing and exact commits (write, delete, rename) confined to
``$SEEPIENT_HOME/memory/user`` and ``$SEEPIENT_HOME/memory/projects/<workspace id>``.

This is the one narrow carve-out from self-protection: nothing here can name a path outside a memory folder,
and no symbolic link is ever followed below ``$SEEPIENT_HOME``.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from seepient.config.memory_paths import MemoryPathError, memory_parts, memory_root
from seepient.config.paths import MemoryScope
from seepient.execution.commit import commit_change
from seepient.execution.nofollow import is_symlink_at
from seepient.protocol.actions import MemoryAction
from seepient.protocol.outcomes import CommitOutcome

MAX_MEMORY_FILE_BYTES = 256 * 1024
MAX_LISTED = 500
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_RENAME_NOREPLACE = 1


@contextlib.contextmanager
def _open_folder(seepient_home: Path, root: Path, *, create: bool) -> Iterator[int | None]:
    """The memory folder opened without following a symlink anywhere below ``$SEEPIENT_HOME`` (None when it
    does not exist and ``create`` is false)."""
    below = root.relative_to(seepient_home).parts
    if create:
        os.makedirs(seepient_home, mode=0o700, exist_ok=True)
    try:
        home_fd = os.open(seepient_home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        fd = _descend(
            home_fd,
            below,
            create=create,
            refusal="a symbolic link inside the Seepient home; refusing to follow it",
        )
    except FileNotFoundError:
        if create:
            raise
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _descend(fd: int, names: Sequence[str], *, create: bool, refusal: str, display: str | None = None) -> int:
    """The directory ``names`` spell below ``fd``, opened a level at a time without following a symbolic
    link (refused with ``refusal``), missing levels made when ``create``. Takes ``fd`` over; the caller closes
    the directory returned."""
    try:
        for name in names:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=fd)
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and is_symlink_at(fd, name):
                    raise PermissionError(errno.EACCES, refusal, display or name) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _walk(folder_fd: int, parts: list[str], display: str) -> int:
    """The directory ``parts`` names below the folder, opened without following symlinks."""
    try:
        return _descend(
            os.dup(folder_fd),
            parts,
            create=False,
            refusal="a symbolic link in the memory folder; refusing to follow it",
            display=display,
        )
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            raise NotADirectoryError(errno.ENOTDIR, f"{exc.filename} is not a folder", display) from None
        raise type(exc)(exc.errno, exc.strerror, display) from None


def _read_at(parent_fd: int, name: str, display: str) -> bytes:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PermissionError(errno.EACCES, "a symbolic link; refusing to follow it", display) from None
        raise type(exc)(exc.errno, exc.strerror, display) from None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder", display)
        if not stat.S_ISREG(mode):
            raise PermissionError(errno.EACCES, "not a regular file; refusing to read it", display)
        return handle.read(MAX_MEMORY_FILE_BYTES + 1)


def read_memory(seepient_home: Path, workspace: Path, scope: MemoryScope, path: str) -> bytes:
    parts = memory_parts(path)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, "is a folder", path or "/")
    with _open_folder(seepient_home, memory_root(seepient_home, workspace, scope), create=False) as folder:
        if folder is None:
            raise FileNotFoundError(errno.ENOENT, "no such memory file", path)
        parent = _walk(folder, parts[:-1], path)
        try:
            return _read_at(parent, parts[-1], path)
        finally:
            os.close(parent)


def list_memory(
    seepient_home: Path, workspace: Path, scope: MemoryScope, path: str, *, depth: int = 2
) -> list[str]:
    """Entries below ``path`` to ``depth`` levels, relative to it, folders ending in '/', sorted."""
    parts = memory_parts(path)
    with _open_folder(seepient_home, memory_root(seepient_home, workspace, scope), create=False) as folder:
        if folder is None:
            if parts:
                raise FileNotFoundError(errno.ENOENT, "no such memory folder", path)
            return []
        if parts:
            parent = _walk(folder, parts[:-1], path)
            try:
                info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
                if not stat.S_ISDIR(info.st_mode):
                    raise NotADirectoryError(errno.ENOTDIR, "is a file, not a folder", path)
            finally:
                os.close(parent)
        fd = _walk(folder, parts, path)
        try:
            found: list[str] = []
            _list_into(fd, "", depth, found)
            return sorted(found)
        finally:
            os.close(fd)


def _list_into(fd: int, prefix: str, depth: int, found: list[str]) -> None:
    with os.scandir(fd) as entries:
        items = sorted(
            (entry.name, entry.is_dir(follow_symlinks=False), entry.is_symlink()) for entry in entries
        )
    for name, is_dir, is_link in items:
        if name.startswith(".") or is_link or len(found) >= MAX_LISTED:
            continue
        if is_dir:
            found.append(f"{prefix}{name}/")
            if depth > 1:
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue
                try:
                    _list_into(child, f"{prefix}{name}/", depth - 1, found)
                finally:
                    os.close(child)
        else:
            found.append(f"{prefix}{name}")


def commit_memory(seepient_home: Path, workspace: Path, action: MemoryAction) -> CommitOutcome:
    """Carry out a memory write, delete or rename exactly, or touch nothing and say why."""
    shown = action.path
    if action.scope not in ("user", "project"):
        return CommitOutcome(code="INVALID", message="a memory write names the user or the project folder")
    try:
        parts = memory_parts(action.path)
        if not parts:
            raise MemoryPathError("name a memory file, not the folder itself")
        root = memory_root(seepient_home, workspace, action.scope)
        if action.command in ("create", "str_replace", "insert"):
            change = action.change
            if change is None or change.path != action.path or change.delete:
                return CommitOutcome(
                    code="INVALID", message="a memory write carries one change to its own path"
                )
            if (
                change.new_content is not None
                and len(change.new_content.encode("utf-8", "replace")) > MAX_MEMORY_FILE_BYTES
            ):
                return CommitOutcome(
                    code="INVALID", message=f"memory files hold at most {MAX_MEMORY_FILE_BYTES} bytes"
                )
            with _open_folder(seepient_home, root, create=True):
                pass
            # Notes are Seepient's own state (they may quote what the user said): readable by the user alone.
            return commit_change(root, change, new_file_mode=0o600)
        if action.pre_image_sha256 is None:
            return CommitOutcome(code="INVALID", message=f"{action.command} needs the file's pre-image hash")
        with _open_folder(seepient_home, root, create=False) as folder:
            if folder is None:
                return CommitOutcome(code="FILE_CHANGED", message=f"{shown} no longer exists", path=shown)
            if action.command == "delete":
                return _delete(folder, parts, action.pre_image_sha256, shown)
            if action.command == "rename" and action.new_path is not None:
                target = memory_parts(action.new_path)
                if not target:
                    raise MemoryPathError("rename needs a new file name")
                return _rename(folder, parts, target, action.pre_image_sha256, shown, action.new_path)
        return CommitOutcome(code="INVALID", message=f"{action.command} is not a memory write", path=shown)
    except MemoryPathError as exc:
        return CommitOutcome(code="OUTSIDE_WORKSPACE", message=str(exc), path=shown)
    except OSError as exc:
        detail = exc.strerror or str(exc)
        return CommitOutcome(code="ERROR", message=f"{shown}: {detail}; nothing was changed", path=shown)


def _check_pre_image(parent: int, name: str, expected: str, shown: str) -> CommitOutcome | None:
    try:
        current = _read_at(parent, name, shown)
    except FileNotFoundError:
        return CommitOutcome(
            code="FILE_CHANGED", message=f"{shown} no longer exists; nothing was changed", path=shown
        )
    if hashlib.sha256(current).hexdigest() != expected.lower():
        return CommitOutcome(
            code="FILE_CHANGED",
            message=f"{shown} changed since this was prepared; nothing was changed",
            path=shown,
        )
    return None


def _delete(folder: int, parts: list[str], expected: str, shown: str) -> CommitOutcome:
    parent = _walk(folder, parts[:-1], shown)
    try:
        fcntl.flock(parent, fcntl.LOCK_EX)
        refused = _check_pre_image(parent, parts[-1], expected, shown)
        if refused is not None:
            return refused
        os.unlink(parts[-1], dir_fd=parent)
        with contextlib.suppress(OSError):
            os.fsync(parent)
        return CommitOutcome(code="OK", message=f"{shown} deleted", path=shown)
    finally:
        os.close(parent)


def _open_target_parent(folder: int, parts: list[str], shown: str) -> int:
    return _descend(
        os.dup(folder), parts, create=True, refusal="a symbolic link in the memory folder", display=shown
    )


def _rename(
    folder: int, source: list[str], target: list[str], expected: str, shown: str, new: str
) -> CommitOutcome:
    src_parent = _walk(folder, source[:-1], shown)
    try:
        dst_parent = _open_target_parent(folder, target[:-1], new)
        try:
            same = os.path.samestat(os.fstat(src_parent), os.fstat(dst_parent))
            # Locks are taken in a fixed order so two opposite renames cannot wait on each other.
            locks = (
                [src_parent] if same else sorted((src_parent, dst_parent), key=lambda fd: os.fstat(fd).st_ino)
            )
            for fd in locks:
                fcntl.flock(fd, fcntl.LOCK_EX)
            refused = _check_pre_image(src_parent, source[-1], expected, shown)
            if refused is not None:
                return refused
            try:
                os.stat(target[-1], dir_fd=dst_parent, follow_symlinks=False)
            except FileNotFoundError:
                pass
            else:
                return CommitOutcome(
                    code="FILE_CHANGED", message=f"{new} already exists; nothing was changed", path=shown
                )
            _rename_noreplace(src_parent, source[-1], dst_parent, target[-1], new)
            for fd in {src_parent, dst_parent}:
                with contextlib.suppress(OSError):
                    os.fsync(fd)
            return CommitOutcome(code="OK", message=f"{shown} renamed to {new}", path=new)
        finally:
            os.close(dst_parent)
    finally:
        os.close(src_parent)


def _rename_noreplace(src_dir: int, src: str, dst_dir: int, dst: str, shown: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        result = renameat2(src_dir, os.fsencode(src), dst_dir, os.fsencode(dst), _RENAME_NOREPLACE)
        if result == 0:
            return
        code = ctypes.get_errno()
        if code == errno.EEXIST:
            raise FileExistsError(errno.EEXIST, "already exists", shown)
        if code not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(code, os.strerror(code), shown)
    # Without renameat2: a hard link is exclusive too, and removing the old name completes the move.
    os.link(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir, follow_symlinks=False)
    os.unlink(src, dir_fd=src_dir)
