"""Signed checkpoints of the chain head: an Ed25519 signature over (first hash, seq, hash), made with a key
kept apart from the log, and checked with its public key alone.

The message is the RFC 8785 canonical JSON of ``{"first_hash", "hash", "seq", "type":
"seepient-audit-checkpoint"}``, so anyone holding the public key can check a checkpoint without Seepient.
The ``cryptography`` package is imported when a key is first used, not when this module is, so opening a
session costs nothing until its first record.
"""

from __future__ import annotations

import contextlib
import os
import queue
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seepient.audit._per_process import PerProcess
from seepient.protocol.errors import AuditError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

CHECKPOINT_TYPE = "seepient-audit-checkpoint"


class AuditKeyError(AuditError):
    """The audit signing key or its public key cannot be read or written; the message names the file."""


def public_key_path(signing_key: Path) -> Path:
    """Where the public key of ``signing_key`` is kept: the same name with ``.pub`` for ``.key``."""
    if signing_key.suffix == ".key":
        return signing_key.with_suffix(".pub")
    return signing_key.with_name(signing_key.name + ".pub")


def head_predates_key(anchor_path: Path, key_path: Path) -> bool | None:
    """Whether the anchor was last changed before the key existed (an unsigned head from before signing),
    None when either file is missing.

    Change times (``ctime``), unlike modification times, cannot be set back by whoever writes a file, so an
    anchor rewritten after the key was made cannot pass for one written before it.
    """
    try:
        anchor = os.lstat(anchor_path)
        key = os.lstat(key_path)
    except FileNotFoundError:
        return None
    return anchor.st_ctime_ns <= key.st_ctime_ns


def checkpoint_message(first_hash: str, seq: int, head_hash: str) -> bytes:
    """The bytes a checkpoint signs. Hex digests, an integer and ASCII keys in order: RFC 8785 spelled exactly."""
    return (
        f'{{"first_hash":"{first_hash}","hash":"{head_hash}","seq":{seq},"type":"{CHECKPOINT_TYPE}"}}'
    ).encode("ascii")


class CheckpointSigner:
    """Signs checkpoints with the private key at ``path``, creating the key (0600, atomically) if there is none.

    The key is loaded on first use.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._key: Ed25519PrivateKey | None = None
        self._key_id: str | None = None
        self._lock = threading.Lock()

    @property
    def key_id(self) -> str:
        self._load()
        assert self._key_id is not None
        return self._key_id

    def preload(self) -> None:
        """Load the key now if it exists (a session about to act signs soon), else only import what reading
        one needs: making a key stays with the first record, so a session that records nothing creates none.
        A key that cannot be read is left for the first record to report."""
        if self._key is not None:
            return
        if not os.path.lexists(self.path):
            _import_key_reading()
            return
        with contextlib.suppress(AuditKeyError):
            self._load()
            _SigningThread.shared()

    def sign(self, first_hash: str, seq: int, head_hash: str) -> str:
        """The base64url (unpadded) signature of the checkpoint."""
        from seepient.crypto.ed25519_pem import b64url_encode

        key = self._load()
        return b64url_encode(key.sign(checkpoint_message(first_hash, seq, head_hash)))

    def sign_during(self, work: Callable[[], None], first_hash: str, seq: int, head_hash: str) -> str:
        """Run ``work`` (the record's write and fsync) while another thread signs the checkpoint, and return
        the signature: the fsync sleeps without holding the interpreter lock, so signing costs the append
        next to nothing. ``work``'s exception, if any, is raised once the signature is done."""
        key = self._load()
        message = checkpoint_message(first_hash, seq, head_hash)
        worker = _SigningThread.shared()
        if not worker.busy.acquire(blocking=False):
            # Another log of this process is signing during its own fsync: sign here rather than wait for it.
            signature = self.sign(first_hash, seq, head_hash)
            work()
            return signature
        try:
            worker.submit(key, message)
            try:
                work()
            finally:
                signature = worker.result()
        finally:
            worker.busy.release()
        return signature

    def verifier(self) -> CheckpointVerifier:
        return CheckpointVerifier(self._load().public_key())

    def _load(self) -> Ed25519PrivateKey:
        key = self._key
        if key is not None:
            return key
        with self._lock:
            if self._key is None:
                self._key = _load_or_create(self.path)
                self._key_id = _key_id(self._key.public_key())
            return self._key


class _SigningThread:
    """The one daemon thread of a process that signs a message handed to it while the caller does something
    else: one for every signer, since a thread started per session cost each session a start that had to wait
    for the interpreter lock."""

    @classmethod
    def shared(cls) -> _SigningThread:
        """The process's signing thread, started at its first use (a forked child starts its own)."""
        return _ONE_SIGNINGTHREAD.get()

    def __init__(self) -> None:
        self.busy = threading.Lock()
        # Queues, not events: a put or get is one C call where an Event's set and wait go through a Condition
        # in Python, which cost the appending thread more than the signature. Each job is numbered, so a result
        # whose caller stopped waiting (interrupted) is never taken for the next job's.
        self._jobs: queue.SimpleQueue[tuple[int, Ed25519PrivateKey, bytes]] = queue.SimpleQueue()
        self._results: queue.SimpleQueue[tuple[int, str | BaseException]] = queue.SimpleQueue()
        self._submitted = 0
        threading.Thread(target=self._run, name="seepient-audit-signer", daemon=True).start()

    def submit(self, key: Ed25519PrivateKey, message: bytes) -> None:
        self._submitted += 1
        self._jobs.put((self._submitted, key, message))

    def result(self) -> str:
        while True:
            number, result = self._results.get()
            if number == self._submitted:
                break
        if isinstance(result, BaseException):
            raise result
        return result

    def _run(self) -> None:
        from seepient.crypto.ed25519_pem import b64url_encode

        while True:
            number, key, message = self._jobs.get()
            try:
                result: str | BaseException = b64url_encode(key.sign(message))
            except BaseException as error:  # handed to the caller, which raises it
                result = error
            self._results.put((number, result))


class CheckpointVerifier:
    """Checks checkpoint signatures against one public key."""

    def __init__(self, public_key: Ed25519PublicKey) -> None:
        self._key = public_key
        self.key_id = _key_id(public_key)

    @classmethod
    def from_file(cls, path: Path) -> CheckpointVerifier:
        """The public key at ``path`` (PEM); ``AuditKeyError`` when it is missing or not an Ed25519 key."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            data = Path(path).read_bytes()
        except OSError as error:
            raise AuditKeyError(
                f"cannot read the audit public key {path}: {error.strerror or error}"
            ) from None
        try:
            key = serialization.load_pem_public_key(data)
        except (ValueError, TypeError) as error:
            raise AuditKeyError(f"{path} is not a PEM public key ({error})") from None
        if not isinstance(key, Ed25519PublicKey):
            raise AuditKeyError(f"{path} is not an Ed25519 public key (found {type(key).__name__})")
        return cls(key)

    def valid(self, first_hash: str, seq: int, head_hash: str, signature: str) -> bool:
        from cryptography.exceptions import InvalidSignature

        from seepient.crypto.ed25519_pem import b64url_decode

        try:
            raw = b64url_decode(signature)
        except ValueError:
            return False
        try:
            self._key.verify(raw, checkpoint_message(first_hash, seq, head_hash))
        except InvalidSignature:
            return False
        return True


def _key_id(public_key: Ed25519PublicKey) -> str:
    from seepient.crypto.ed25519_pem import key_id

    return key_id(public_key.public_bytes_raw())


def _import_key_reading() -> None:
    from cryptography.hazmat.primitives import serialization  # noqa: F401
    from cryptography.hazmat.primitives.asymmetric import ed25519  # noqa: F401

    from seepient.crypto import ed25519_pem, files, signing  # noqa: F401


def _load_or_create(path: Path) -> Ed25519PrivateKey:
    from seepient.crypto.ed25519_pem import public_key_pem

    _private_directory(path.parent)
    key = _read_private(path)
    if key is None:
        from seepient.crypto.files import CryptoFileError
        from seepient.crypto.signing import generate_signing_key, private_key_pem

        fresh = generate_signing_key()
        try:
            _write_private(path, private_key_pem(fresh))
            key = fresh
        except CryptoFileError:
            # Another process created it first (the write refuses to replace a file): use that one.
            key = _read_private(path)
            if key is None:
                raise AuditKeyError(f"cannot create the audit signing key {path}") from None
    _ensure_public_file(public_key_path(path), public_key_pem(key.public_key().public_bytes_raw()))
    return key


def _private_directory(directory: Path) -> None:
    if directory.is_dir():
        return
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        directory.mkdir(mode=0o700)
        os.chmod(directory, 0o700)  # mkdir's mode is filtered by the umask
    except FileExistsError:
        pass
    except OSError as error:
        raise AuditKeyError(f"cannot create the key folder {directory}: {error.strerror or error}") from None


def _read_private(path: Path) -> Ed25519PrivateKey | None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from seepient.crypto.ed25519_pem import private_key_from_pem

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise AuditKeyError(f"cannot open the audit signing key {path}: {error.strerror or error}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise AuditKeyError(f"{path} is not a regular file, so it is not the audit signing key")
        if info.st_mode & 0o077:
            raise AuditKeyError(
                f"the audit signing key {path} is readable by other users (mode {stat.S_IMODE(info.st_mode):04o}); "
                f"run chmod 600 {path}"
            )
        data = _read_all(fd)
    finally:
        os.close(fd)
    # The key as Seepient writes it is read without loading cryptography's serialization package; any other
    # PEM (another tool's, another key type) goes through that package's full parser.
    key: Any = private_key_from_pem(data)
    if key is not None:
        return key
    from cryptography.hazmat.primitives import serialization

    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise AuditKeyError(f"{path} is not an unencrypted PEM private key ({error})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise AuditKeyError(f"{path} is not an Ed25519 private key (found {type(key).__name__})")
    return key


def _write_private(path: Path, data: bytes) -> None:
    from seepient.crypto.files import write_secret_file

    write_secret_file(path, data, overwrite=False)


def _ensure_public_file(path: Path, data: bytes) -> None:
    try:
        if path.read_bytes() == data:
            return
    except FileNotFoundError:
        pass
    except OSError as error:
        raise AuditKeyError(f"cannot read the audit public key {path}: {error.strerror or error}") from None
    else:
        # A public key that does not belong to the signing key would make every later verification fail;
        # it is never silently replaced, since that is exactly what a forger would want.
        raise AuditKeyError(
            f"{path} is not the public key of the audit signing key beside it; move one of them aside "
            "(keep the old pair if you still need to verify logs it signed)"
        )
    from seepient.crypto.files import CryptoFileError, write_secret_file

    try:
        write_secret_file(path, data, overwrite=False)
    except CryptoFileError:
        if path.read_bytes() != data:  # written by a process that created the same key's pair meanwhile
            raise AuditKeyError(f"{path} appeared meanwhile and is not this key's public key") from None


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


_ONE_SIGNINGTHREAD = PerProcess(_SigningThread)
