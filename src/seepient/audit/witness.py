"""The witness: a second copy of every signed checkpoint, in a file the user keeps elsewhere (another volume),
so that a log rolled back to an earlier prefix, or deleted together with its anchor, no longer verifies.

The file has the anchor's format (two checksummed 512-byte slots, each a signed checkpoint) and is updated
the same way, in place and after the record is durable, so it never names a record the log lacks; it may
lag behind the log after a power loss, never run ahead of it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from seepient.audit.anchor import (
    ANCHOR_FILE_SIZE,
    ANCHOR_SLOT_SIZE,
    AnchorFile,
    AnchorUnreadable,
    open_regular_file,
    parse_anchor,
    read_regular_file,
)
from seepient.protocol.errors import AuditError

_READ_LIMIT = 64 * 1024
_ROLE = "the audit witness"


class WitnessError(AuditError):
    """The witness file cannot be opened, created or read as a witness; the message names it."""


def read_witness(path: Path) -> AnchorFile | None:
    """What the witness at ``path`` holds, None when it does not exist or was never written to."""
    return read_regular_file(path, WitnessError, _ROLE, _parse)


class WitnessFile:
    """The writer's handle on the witness: opened (or created, 0600) under the log's lock, updated per append."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._next_slot = 0
        self._whole = False
        #: why the last update did not reach the witness (it lags until an update succeeds), None when it did
        self.problem: str | None = None

    def open(self) -> AnchorFile | None:
        """(Re)open the file by its path and return what it holds; ``WitnessError`` if it is not a witness."""
        self.close()
        try:
            fd = _open(self.path, os.O_RDWR)
        except FileNotFoundError:
            fd = self._create()
        try:
            held = _parse(fd, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._whole = held is not None
        self._next_slot = 0 if held is None else 1 - held.newest_slot
        return held

    def record(self, slot: bytes) -> None:
        """Write one signed checkpoint; a failure is kept in ``problem`` (the record itself is already durable)."""
        fd = self._fd
        if fd is None:
            self.problem = f"the witness {self.path} is not open"
            return
        try:
            if self._whole:
                written = os.pwrite(fd, slot, self._next_slot * ANCHOR_SLOT_SIZE)
                expected = len(slot)
            else:
                # A new or empty witness gets both slots at once, so it is a whole witness from its first write.
                written = os.pwrite(fd, slot * 2, 0)
                expected = ANCHOR_FILE_SIZE
                self._next_slot = 0
        except OSError as error:
            self.problem = f"could not update the witness {self.path}: {error.strerror or error}"
            return
        if written != expected:
            self.problem = f"the witness {self.path} took only {written} of {expected} bytes"
            return
        self._whole = True
        self._next_slot = 1 - self._next_slot
        self.problem = None

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _create(self) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            fd = os.open(self.path, flags, 0o600)
        except FileExistsError:
            return _open(self.path, os.O_RDWR)  # created by another writer meanwhile
        except OSError as error:
            raise WitnessError(
                f"cannot create the audit witness {self.path}: {error.strerror or error} (is its volume mounted?)"
            ) from None
        os.fchmod(fd, 0o600)
        return fd


def _open(path: Path, flags: int) -> int:
    return open_regular_file(path, flags, WitnessError, _ROLE)


def _parse(fd: int, path: Path) -> AnchorFile | None:
    raw = os.pread(fd, _READ_LIMIT, 0)
    if not raw:
        return None
    try:
        return parse_anchor(raw, path)
    except AnchorUnreadable as error:
        # Never overwrite a file that is not a witness: a mistyped path must not cost the user a file.
        raise WitnessError(
            f"{path} is not an audit witness ({error}); point audit.witnessPath elsewhere"
        ) from None
