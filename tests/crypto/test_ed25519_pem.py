"""The PEM forms read and written without cryptography's serialization package agree with that package byte for
byte (keys already on disk keep their public files and names), and every other PEM is left to it."""

from __future__ import annotations

import base64
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from seepient.crypto import ed25519_pem
from seepient.crypto.signing import key_id_for, private_key_pem, public_key_pem
from tests.conftest import REPO


def _raw_private(key: ed25519.Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def test_keys_written_by_cryptography_read_and_name_the_same() -> None:
    for _ in range(50):
        key = ed25519.Ed25519PrivateKey.generate()
        read = ed25519_pem.private_key_from_pem(private_key_pem(key))
        assert read is not None and _raw_private(read) == _raw_private(key)
        raw = key.public_key().public_bytes_raw()
        assert ed25519_pem.public_key_pem(raw) == public_key_pem(key.public_key())
        assert ed25519_pem.key_id(raw) == key_id_for(key.public_key())


def test_the_name_is_the_sha256_of_the_raw_public_key() -> None:
    key = ed25519.Ed25519PrivateKey.generate().public_key()
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    import hashlib

    assert key_id_for(key) == "ed25519:" + hashlib.sha256(raw).hexdigest()[:16]


def _other_pems() -> list[bytes]:
    ed = ed25519.Ed25519PrivateKey.generate()
    pem = private_key_pem(ed)
    body = pem.split(b"\n")[1]
    return [
        # Encrypted, another curve, a public key, no PEM at all.
        ed.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        ),
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        public_key_pem(ed.public_key()),
        b"",
        b"not a key\n",
        # The right shape spoiled: trailing text, a second block, a cut body, bytes past the seed, CRLF lines.
        pem + b"trailing\n",
        pem + pem,
        pem.replace(body, body[:-8]),
        b"-----BEGIN PRIVATE KEY-----\n"
        + base64.b64encode(base64.b64decode(body) + b"\x00")
        + b"\n-----END PRIVATE KEY-----\n",
        pem.replace(b"\n", b"\r\n"),
        pem.replace(b"PRIVATE KEY", b"ED25519 PRIVATE KEY"),
    ]


@pytest.mark.parametrize("index", range(len(_other_pems())))
def test_any_other_pem_is_left_to_cryptography(index: int) -> None:
    assert ed25519_pem.private_key_from_pem(_other_pems()[index]) is None


def test_a_public_key_must_be_32_bytes() -> None:
    with pytest.raises(ValueError):
        ed25519_pem.public_key_pem(b"\x00" * 31)


def test_base64url_round_trip_and_refusals() -> None:
    for data in (b"", b"\x00", b"\xff" * 64, bytes(range(256))):
        text = ed25519_pem.b64url_encode(data)
        assert "=" not in text and ed25519_pem.b64url_decode(text) == data
    for bad in ("a", "é"):
        with pytest.raises(ValueError):
            ed25519_pem.b64url_decode(bad)


def test_the_audit_log_signs_with_its_key_without_the_serialization_package(tmp_path: Path) -> None:
    """A session's first record reads the signing key; the PEM it reads needs no more than the Ed25519 module."""
    code = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from seepient.audit.log import AuditLog
        from seepient.audit.signing import CheckpointSigner

        root = Path(sys.argv[1])
        log = AuditLog(root / "audit.log", signer=CheckpointSigner(root / "keys" / "audit-signing.key"))
        log.append({"type": "session_started", "session_id": "s", "surface": "test"})
        log.close()
        print("serialization" if "cryptography.hazmat.primitives.serialization" in sys.modules else "without")
        """
    )

    def run() -> str:
        done = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=REPO, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    run()  # the first makes the key (cryptography writes its PEM)
    assert run() == "without"
    assert (tmp_path / "keys" / "audit-signing.pub").read_bytes() == public_key_pem(
        serialization.load_pem_private_key(
            (tmp_path / "keys" / "audit-signing.key").read_bytes(), None
        ).public_key()  # type: ignore[union-attr,arg-type]
    )
