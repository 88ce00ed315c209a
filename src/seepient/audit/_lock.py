"""The cross-process lock on ``<log>.lock``: an exclusive ``flock`` on a descriptor kept open between uses.

Writers hold it for each append; ``verify`` takes it to re-check a failing pass. Any other program that
``flock``s the same file (``filelock.FileLock`` does) excludes and is excluded the same way.
"""

from __future__ import annotations

import fcntl
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

from seepient.protocol.errors import AuditError

# A waiter polls (flock cannot block with a deadline from a thread): short first pauses keep a waiter
# close behind a holder whose appends take a fraction of a millisecond; the cap keeps idle waiting cheap.
_FIRST_PAUSE = 0.0001
_MAX_PAUSE = 0.005


class LockTimeout(AuditError):
    """Another holder kept the lock for the whole wait."""


class ProcessLock:
    """An exclusive ``flock`` on one lock file, waited for with a deadline.

    ``flock`` locks belong to an open file description, so this excludes every other opening of the file
    (other processes, and other ``ProcessLock`` objects in this process) but not threads sharing this
    object: callers serialise their own threads. A child made by ``fork`` shares the description and must
    call ``close`` before using the object (closing there leaves the parent's lock alone).
    """

    def __init__(self, path: Path, *, make_parent: Callable[[Path], None] | None = None) -> None:
        self.path = path
        self._path = os.fspath(path)
        self._make_parent = make_parent
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None

    def acquire(self, timeout: float) -> None:
        """Take the lock, waiting at most ``timeout`` seconds (``LockTimeout``); ``OSError`` if unopenable."""
        fd = self._fd
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass
            else:
                if self._still_at_path():
                    return
                # The file was removed or replaced since it was opened: a lock on the orphaned inode
                # excludes nobody who opens the path now, so follow the path to the file the others lock.
                fcntl.flock(fd, fcntl.LOCK_UN)
                self.close()
        self._wait_for(timeout)

    def _wait_for(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        pause = _FIRST_PAUSE
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise LockTimeout(f"{self.path} stayed locked for {timeout:g}s") from None
                time.sleep(min(pause, remaining))
                pause = min(pause * 2, _MAX_PAUSE)
                continue
            if self._still_at_path():
                return
            fcntl.flock(fd, fcntl.LOCK_UN)
            self.close()

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the descriptor (which releases the lock unless a forked parent still holds it open)."""
        fd, self._fd, self._identity = self._fd, None, None
        if fd is not None:
            os.close(fd)

    def _open(self) -> int:
        if self._fd is not None:
            return self._fd
        # O_NOFOLLOW: a symlink planted at the lock path must not make writers lock some other file;
        # O_NONBLOCK: a FIFO planted there must not hang the open (it is refused below).
        flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = self._create(flags)
        except FileNotFoundError:
            if self._make_parent is None:
                raise
            self._make_parent(self.path.parent)
            fd = self._create(flags)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise OSError(f"{self.path} is not a regular file")
        self._fd, self._identity = fd, (info.st_dev, info.st_ino)
        return fd

    def _create(self, flags: int) -> int:
        try:
            fd = os.open(self._path, flags | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return os.open(self._path, flags)
        # The mode given to open is filtered by the umask; the lock file must stay private like the log.
        os.fchmod(fd, 0o600)
        return fd

    def _still_at_path(self) -> bool:
        try:
            info = os.lstat(self._path)
        except FileNotFoundError:
            return False
        return (info.st_dev, info.st_ino) == self._identity
