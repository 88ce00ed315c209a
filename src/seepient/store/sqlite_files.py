"""SQLite as the store uses it: the database file created private (0600, with its companions), and the pragmas
each connection runs (WAL, ``synchronous=NORMAL``, foreign keys, a busy timeout)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

_SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def private_sqlite_file(path: Path) -> None:
    """Create the database file 0600 whatever the umask, before SQLite (and any conversation or token hash)
    touches it; SQLite gives its -wal and -shm files the database's own mode. A database left readable by an
    older version is narrowed to 0600 with its companions; files of another owner are left as they are."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        pass
    else:
        try:
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
    for candidate in (path, *(path.with_name(path.name + suffix) for suffix in _SQLITE_COMPANIONS)):
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and info.st_mode & 0o077:
            os.chmod(candidate, 0o600)


def sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # In WAL mode NORMAL keeps every commit across a crash or kill -9 of the server (the WAL is in the OS's
    # hands once written); only an OS crash or power loss can drop the last commits, and never corrupts.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()
