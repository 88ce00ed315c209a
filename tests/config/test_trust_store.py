"""The trust store: private and atomic, every concurrent writer remembered, and a store that someone else could
have written (a link, another owner, writable by others, not JSON) refused instead of believed or overwritten."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seepient.config.trust import TrustStore, TrustStoreError
from tests.conftest import REPO


@pytest.fixture
def store(tmp_path: Path) -> TrustStore:
    return TrustStore(tmp_path / "home" / "trusted-projects.json")


def test_a_new_store_is_private_and_holds_the_hash(store, tmp_path):
    store.trust(tmp_path, "ab" * 32)
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    data = json.loads(store.path.read_text())
    assert data["workspaces"][os.path.realpath(tmp_path)]["settingsSha256"] == "ab" * 32
    assert store.is_trusted(tmp_path, "ab" * 32) and not store.is_trusted(tmp_path, "cd" * 32)
    assert [p.name for p in store.path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_concurrent_writers_are_all_remembered(store, tmp_path):
    folders = []
    for n in range(4):
        folder = tmp_path / f"p{n}"
        folder.mkdir()
        folders.append(folder)
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from seepient.config.trust import TrustStore
        store = TrustStore(Path(sys.argv[1]))
        for _ in range(5):
            store.trust(Path(sys.argv[2]), "00" * 32)
        """
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(store.path), str(f)], cwd=REPO) for f in folders
    ]
    assert [w.wait(timeout=60) for w in writers] == [0] * len(folders)
    assert set(store.entries()) == {os.path.realpath(f) for f in folders}


def test_a_failed_write_leaves_the_old_store_and_no_temporary_file(store, tmp_path, monkeypatch):
    store.trust(tmp_path, "11" * 32)
    before = store.path.read_bytes()

    def refuse(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(TrustStoreError, match="cannot be written"):
        store.trust(tmp_path / "other", "22" * 32)
    assert store.path.read_bytes() == before
    assert [p.name for p in store.path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_linked_store_is_refused(store, tmp_path):
    planted = tmp_path / "planted.json"
    planted.write_text(json.dumps({"workspaces": {str(tmp_path): {"settingsSha256": "x"}}}))
    store.path.parent.mkdir(parents=True)
    store.path.symlink_to(planted)
    with pytest.raises(TrustStoreError, match="a link is never followed"):
        store.is_trusted(tmp_path, "x")


def test_a_store_others_can_write_is_refused(store, tmp_path):
    store.trust(tmp_path, "x")
    store.path.chmod(0o666)
    with pytest.raises(TrustStoreError, match="writable by other users"):
        store.is_trusted(tmp_path, "x")


@pytest.mark.parametrize("content", ["{not json", '{"workspaces": []}', '{"workspaces": {"/x": {"sha": 1}}}'])
def test_a_malformed_store_is_refused_and_never_overwritten(store, tmp_path, content):
    store.path.parent.mkdir(parents=True)
    store.path.write_text(content)
    store.path.chmod(0o600)
    with pytest.raises(TrustStoreError, match="fix or remove it"):
        store.is_trusted(tmp_path, "x")
    with pytest.raises(TrustStoreError):
        store.trust(tmp_path, "x")
    assert store.path.read_text() == content


def test_revoke(store, tmp_path):
    assert store.revoke(tmp_path) is False
    store.trust(tmp_path, "x")
    assert store.revoke(tmp_path) is True and store.entries() == {}
