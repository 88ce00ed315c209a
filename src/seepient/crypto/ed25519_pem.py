"""Ed25519 keys in the PEM forms Seepient writes them in (PKCS#8 private, SubjectPublicKeyInfo public), their
names and the base64url of signatures, without cryptography's ``serialization`` package: the audit log reads
its signing key at a session's first record, and loading that package cost the read more than the rest of it.

Only the one shape cryptography writes for an unencrypted Ed25519 key is read here; anything else (another
key type, a PKCS#8 v2 key with its public half, an encrypted key) is left to cryptography's full parser."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

# DER of PrivateKeyInfo {version 0, AlgorithmIdentifier {id-Ed25519}, OCTET STRING {OCTET STRING seed}} up to
# the 32-byte seed (RFC 8410 §7), and of SubjectPublicKeyInfo {AlgorithmIdentifier {id-Ed25519}, BIT STRING}
# up to the 32-byte public key (RFC 8410 §4).
_PKCS8_PREFIX = bytes.fromhex("302e020100300506032b657004220420")
_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")
_KEY_BYTES = 32
_PRIVATE_LABEL = b"PRIVATE KEY"
_PUBLIC_LABEL = b"PUBLIC KEY"


def private_key_from_pem(data: bytes) -> Ed25519PrivateKey | None:
    """The key in ``data`` when it is one unencrypted PKCS#8 v1 Ed25519 private key in PEM, else None."""
    der = _pem_body(data, _PRIVATE_LABEL)
    if der is None or len(der) != len(_PKCS8_PREFIX) + _KEY_BYTES or not der.startswith(_PKCS8_PREFIX):
        return None
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(der[len(_PKCS8_PREFIX) :])


def public_key_pem(raw: bytes) -> bytes:
    """The SubjectPublicKeyInfo PEM of the raw 32-byte public key ``raw``, byte for byte as cryptography
    writes it."""
    if len(raw) != _KEY_BYTES:
        raise ValueError(f"an Ed25519 public key is {_KEY_BYTES} bytes, not {len(raw)}")
    body = base64.b64encode(_SPKI_PREFIX + raw)
    lines = b"\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return b"-----BEGIN PUBLIC KEY-----\n" + lines + b"\n-----END PUBLIC KEY-----\n"


def key_id(raw: bytes) -> str:
    """A stable name for a key: ``ed25519:`` and the first 16 hex digits of SHA-256 of its raw public bytes."""
    return "ed25519:" + hashlib.sha256(raw).hexdigest()[:16]


def b64url_encode(data: bytes) -> str:
    """Unpadded base64url, the form every Seepient signature is written in."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """The bytes of unpadded base64url text; ``ValueError`` when it is not that."""
    if not isinstance(text, str) or not text.isascii():
        raise ValueError("signature is not base64url text")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"signature is not base64url: {exc}") from None


def _pem_body(data: bytes, label: bytes) -> bytes | None:
    """The DER inside one PEM block labelled ``label`` that is all of ``data`` (newline-ended lines)."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if (
        len(lines) < 3
        or lines[0] != b"-----BEGIN " + label + b"-----"
        or lines[-1] != b"-----END " + label + b"-----"
    ):
        return None
    try:
        return base64.b64decode(b"".join(lines[1:-1]), validate=True)
    except (binascii.Error, ValueError):
        return None
