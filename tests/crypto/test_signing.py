"""Ed25519 signatures over canonical JSON: stable across key order and whitespace, broken by any change."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from seepient.crypto import (
    CryptoFileError,
    canonical_bytes,
    generate_signing_key,
    key_id_for,
    load_signing_key,
    load_verify_key,
    save_signing_key,
    save_verify_key,
    sign_fields,
    signature_valid,
)


def test_canonical_json_follows_rfc8785() -> None:
    assert canonical_bytes({"b": [1, 2.0, "é"], "a": None}) == b'{"a":null,"b":[1,2,"\xc3\xa9"]}'
    with pytest.raises(ValueError, match="no canonical JSON"):
        canonical_bytes({"n": 2**60})


def test_a_signature_covers_every_field_but_itself_and_ignores_serialisation() -> None:
    key = generate_signing_key()
    document = {"z": 1, "a": {"nested": [1, 2]}, "signature": "ignored"}
    signature = sign_fields(document, key)
    reordered = json.loads(json.dumps({"a": {"nested": [1, 2]}, "z": 1}, indent=4))
    assert signature_valid(reordered, signature, key.public_key())
    assert not signature_valid({**reordered, "z": 2}, signature, key.public_key())
    assert not signature_valid({**reordered, "extra": None}, signature, key.public_key())
    assert not signature_valid(reordered, signature, generate_signing_key().public_key())
    for garbage in ("", "!!!", signature[:-2], "é"):
        assert not signature_valid(reordered, garbage, key.public_key())


def test_keys_round_trip_with_private_files_at_0600(tmp_path: Path) -> None:
    key = generate_signing_key()
    save_signing_key(key, tmp_path / "k.key")
    save_verify_key(key.public_key(), tmp_path / "k.pub")
    assert stat.S_IMODE((tmp_path / "k.key").stat().st_mode) == 0o600
    assert key_id_for(load_signing_key(tmp_path / "k.key").public_key()) == key_id_for(key.public_key())
    assert key_id_for(load_verify_key(tmp_path / "k.pub")) == key_id_for(key.public_key())
    with pytest.raises(CryptoFileError, match="already exists"):
        save_signing_key(generate_signing_key(), tmp_path / "k.key")
    assert key_id_for(load_signing_key(tmp_path / "k.key").public_key()) == key_id_for(key.public_key())


def test_unreadable_and_wrong_keys_say_which_file(tmp_path: Path) -> None:
    with pytest.raises(CryptoFileError, match="cannot read key file"):
        load_signing_key(tmp_path / "absent")
    (tmp_path / "junk").write_text("hello")
    with pytest.raises(CryptoFileError, match="junk"):
        load_verify_key(tmp_path / "junk")
    save_verify_key(generate_signing_key().public_key(), tmp_path / "pub")
    with pytest.raises(CryptoFileError, match="private key"):
        load_signing_key(tmp_path / "pub")
