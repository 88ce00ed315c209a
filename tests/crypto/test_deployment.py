"""``init_deployment``: all files or none, keys private, configs pointing at the files it wrote."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from seepient.config.settings import Settings
from seepient.crypto import CryptoFileError, init_deployment, key_id_for, load_signing_key, load_verify_key
from seepient.crypto.deployment import ALL_FILES, SECRET_FILES


def test_all_files_are_written_with_private_keys_at_0600(tmp_path: Path) -> None:
    deployment = init_deployment(tmp_path / "d", workspace_root=tmp_path, scheduler_hosts=["sched.internal"])
    assert sorted(path.name for path in deployment.files) == sorted(ALL_FILES)
    for name in ALL_FILES:
        mode = stat.S_IMODE((tmp_path / "d" / name).stat().st_mode)
        assert mode == (0o600 if name in SECRET_FILES else 0o644), name
    signing = load_signing_key(tmp_path / "d" / "dispatch-signing.key")
    assert key_id_for(signing.public_key()) == key_id_for(
        load_verify_key(tmp_path / "d" / "dispatch-signing.pub")
    )
    assert key_id_for(signing.public_key()) == deployment.dispatch_key_id


def test_control_plane_json_is_an_execution_block_the_settings_accept(tmp_path: Path) -> None:
    init_deployment(tmp_path / "d", workspace_root=tmp_path, scheduler_hosts=["sched.internal"])
    document = json.loads((tmp_path / "d" / "control-plane.json").read_text())
    settings = Settings.model_validate(document)
    assert settings.execution.backend == "docker-worker"
    assert settings.execution.scheduler_endpoint == "https://sched.internal:8443"
    assert settings.execution.mtls is not None
    assert settings.execution.mtls.client_key_path == str(tmp_path / "d" / "control-plane-key.pem")
    execution = document["execution"]
    assert execution["tenant"] == "default"
    assert execution["dispatchSigningKeyPath"] == str(tmp_path / "d" / "dispatch-signing.key")
    assert execution["resultVerifyKeyPath"] == str(tmp_path / "d" / "result-signing.pub")


def test_existing_files_are_kept_unless_forced(tmp_path: Path) -> None:
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / "ca.pem").write_text("precious")
    with pytest.raises(CryptoFileError, match="ca.pem; refusing to overwrite"):
        init_deployment(directory, workspace_root=tmp_path)
    assert [path.name for path in directory.iterdir()] == ["ca.pem"]
    assert (directory / "ca.pem").read_text() == "precious"
    init_deployment(directory, workspace_root=tmp_path, force=True)
    assert (directory / "ca.pem").read_text().startswith("-----BEGIN CERTIFICATE-----")


def test_bad_arguments_leave_nothing_behind(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nor a valid DNS name"):
        init_deployment(tmp_path / "d", workspace_root=tmp_path, scheduler_hosts=["bad host"])
    with pytest.raises(ValueError, match="workspace root"):
        init_deployment(tmp_path / "e", workspace_root=tmp_path / "missing")
    assert not (tmp_path / "d").exists() and not (tmp_path / "e").exists()
