"""The ``audit`` settings: where the signing key and the witness are, honoured only outside a project's own
settings, and never inside the workspace (a session refuses to start rather than use them there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seepient.config import SeepientPaths, SettingsError, load_settings
from seepient.runtime import Session, SessionOptions


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.fixture
def paths(tmp_path: Path) -> SeepientPaths:
    return SeepientPaths(home=tmp_path / "home")


def test_defaults_keep_the_key_under_seepient_home(tmp_path, paths):
    audit = load_settings(tmp_path, paths=paths).audit
    assert audit.signing_key(paths) == paths.home / "keys" / "audit-signing.key"
    assert audit.witness() is None


def test_user_settings_choose_key_and_witness(tmp_path, paths):
    _write(
        paths.user_settings,
        {"audit": {"signingKeyPath": "~/keys/a.key", "witnessPath": "/mnt/w/audit.witness"}},
    )
    audit = load_settings(tmp_path, paths=paths).audit
    assert audit.signing_key(paths) == Path("~/keys/a.key").expanduser()
    assert audit.witness() == Path("/mnt/w/audit.witness")


@pytest.mark.parametrize("block", [{"witnessPath": "/home/me/.bashrc"}, {"signingKeyPath": "/tmp/k.key"}])
def test_a_projects_settings_cannot_move_the_key_or_the_witness(tmp_path, paths, block):
    workspace = tmp_path / "ws"
    _write(SeepientPaths.project_settings(workspace), {"audit": block})
    for trusted in (False, True):
        settings = load_settings(workspace, paths=paths, project_trust=trusted)
        # Ignored, trusted or not, and reported: the key and the witness stay where the user put them.
        assert settings.audit.signing_key(paths) == paths.audit_signing_key
        assert settings.audit.witness() is None
        assert settings.project is not None
        assert any(change.key.startswith("audit") for change in settings.project.ignored)


def test_relative_paths_are_refused(tmp_path, paths):
    _write(paths.user_settings, {"audit": {"witnessPath": "witness"}})
    with pytest.raises(SettingsError, match="absolute"):
        load_settings(tmp_path, paths=paths)


@pytest.mark.parametrize("key", ["signingKeyPath", "witnessPath"])
def test_a_session_refuses_a_key_or_witness_inside_the_workspace(tmp_path, paths, key):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _write(paths.user_settings, {"audit": {key: str(workspace / "audit-file")}})
    script = tmp_path / "s.yaml"
    script.write_text("- text: hi\n")
    with pytest.raises(SettingsError, match="inside the workspace"):
        Session.open(SessionOptions(workspace=workspace, model=f"replay:{script}", paths=paths))


async def test_a_workspace_that_contains_seepient_home_keeps_the_default_key(tmp_path):
    # Opening the home folder itself as the workspace is allowed: Seepient's home is refused to every tool.
    paths = SeepientPaths(home=tmp_path / ".seepient")
    script = tmp_path / "s.yaml"
    script.write_text("- text: hi\n")
    session = Session.open(SessionOptions(workspace=tmp_path, model=f"replay:{script}", paths=paths))
    assert session.audit.signer is not None and session.audit.signer.path == paths.audit_signing_key
    await session.aclose()
