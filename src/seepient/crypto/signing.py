"""Ed25519 keys and detached signatures over the RFC 8785 canonical JSON of a document's fields."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from seepient.crypto.ed25519_pem import b64url_decode, b64url_encode, key_id
from seepient.crypto.files import CryptoFileError, write_public_file, write_secret_file
from seepient.protocol.dispatch import SIGNATURE_FIELD


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical JSON: one byte string per JSON value, whoever serialised it."""
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        raise ValueError(f"value has no canonical JSON form: {exc}") from None


def generate_signing_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def key_id_for(public_key: Ed25519PublicKey) -> str:
    """A stable name for a key: ``ed25519:`` and the first 16 hex digits of SHA-256 of its raw bytes."""
    return key_id(public_key.public_bytes_raw())


def private_key_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def public_key_pem(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def save_signing_key(key: Ed25519PrivateKey, path: Path, *, overwrite: bool = False) -> None:
    """Write the private key as PKCS#8 PEM with mode 0600 (atomically; refuses to replace unless ``overwrite``)."""
    write_secret_file(path, private_key_pem(key), overwrite=overwrite)


def save_verify_key(key: Ed25519PublicKey, path: Path, *, overwrite: bool = False) -> None:
    write_public_file(path, public_key_pem(key), overwrite=overwrite)


def load_signing_key(path: Path) -> Ed25519PrivateKey:
    key = _load_pem(path, private=True)
    if not isinstance(key, Ed25519PrivateKey):
        raise CryptoFileError(f"{path}: not an Ed25519 private key (found {type(key).__name__})")
    return key


def load_verify_key(path: Path) -> Ed25519PublicKey:
    key = _load_pem(path, private=False)
    if not isinstance(key, Ed25519PublicKey):
        raise CryptoFileError(f"{path}: not an Ed25519 public key (found {type(key).__name__})")
    return key


def _load_pem(path: Path, *, private: bool) -> Any:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CryptoFileError(f"cannot read key file {path}: {exc.strerror or exc}") from None
    try:
        if private:
            return serialization.load_pem_private_key(data, password=None)
        return serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        kind = "private" if private else "public"
        raise CryptoFileError(f"{path}: not a readable unencrypted PEM {kind} key ({exc})") from None


def sign_fields(fields: Mapping[str, Any], key: Ed25519PrivateKey) -> str:
    """Base64url (unpadded) Ed25519 signature over the canonical JSON of ``fields`` minus ``signature``."""
    return b64url_encode(key.sign(canonical_bytes(_unsigned(fields))))


def signature_valid(fields: Mapping[str, Any], signature: str, key: Ed25519PublicKey) -> bool:
    """True when ``signature`` is ``key``'s signature over ``fields`` minus ``signature``.

    Ed25519 verification compares in constant time inside the library; nothing here branches on
    how much of a forged signature was right.
    """
    try:
        raw_signature = b64url_decode(signature)
        message = canonical_bytes(_unsigned(fields))
    except ValueError:
        return False
    try:
        key.verify(raw_signature, message)
    except InvalidSignature:
        return False
    return True


def _unsigned(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if name != SIGNATURE_FIELD}
