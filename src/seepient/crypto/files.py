"""Writing key, certificate and config files atomically, secrets with mode 0600 from the first byte."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from seepient.protocol.errors import ConfigurationError


class CryptoFileError(ConfigurationError):
    """A key, certificate or config file that cannot be read or written; the message names the file."""


def write_secret_file(path: Path, data: bytes, *, overwrite: bool = False) -> None:
    _write_atomically(path, data, mode=0o600, overwrite=overwrite)


def write_public_file(path: Path, data: bytes, *, overwrite: bool = False) -> None:
    _write_atomically(path, data, mode=0o644, overwrite=overwrite)


def _write_atomically(path: Path, data: bytes, *, mode: int, overwrite: bool) -> None:
    if not overwrite and os.path.lexists(path):
        raise CryptoFileError(f"{path} already exists; refusing to overwrite it")
    # Unique to this call, not only to the process: two threads making the same file at once (sessions of a
    # server on a fresh home) would otherwise share one temporary name and each fail on the other's file.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    # The mode is given to open() (and the umask cannot widen it) so a private key is never readable
    # by others, not even for the moment between creating the file and a later chmod.
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except OSError as exc:
        raise CryptoFileError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        if overwrite:
            os.replace(temporary, path)
        else:
            # link() fails if the name appeared meanwhile, where rename() would silently replace it.
            os.link(temporary, path)
            os.unlink(temporary)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise CryptoFileError(f"cannot write {path}: {exc.strerror or exc}") from None
