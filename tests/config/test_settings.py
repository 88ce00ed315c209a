"""Settings: user < project < --config < flags, clear errors naming the file and position."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seepient.config import SeepientPaths, SettingsError, load_settings
from seepient.config.settings import normalise_mode


@pytest.fixture
def paths(tmp_path: Path) -> SeepientPaths:
    return SeepientPaths(home=tmp_path / "home")


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_defaults_without_files(tmp_path, paths):
    s = load_settings(tmp_path, paths=paths)
    assert s.execution.sandbox == "auto" and s.permissions.deny == []


def test_precedence_and_rule_lists_add_up(tmp_path, paths):
    ws = tmp_path / "ws"
    _write(
        paths.user_settings,
        {"execution": {"defaultTimeoutMs": 1000, "sandbox": "off"}, "permissions": {"deny": ["Read(.env)"]}},
    )
    _write(
        SeepientPaths.project_settings(ws),
        {"execution": {"defaultTimeoutMs": 2000}, "permissions": {"deny": ["Shell(rm:*)"]}},
    )
    extra = tmp_path / "extra.json"
    _write(extra, {"runtime": {"maxSteps": 7}})
    s = load_settings(
        ws, paths=paths, config_file=extra, overrides={"execution": {"sandbox": "auto"}}, project_trust=True
    )
    assert s.execution.default_timeout_ms == 2000  # trusted: a longer timeout than the user's may apply
    assert s.execution.sandbox == "auto"
    assert s.runtime.max_steps == 7
    assert s.permissions.deny == ["Read(.env)", "Shell(rm:*)"]
    untrusted = load_settings(ws, paths=paths, config_file=extra)
    assert untrusted.execution.default_timeout_ms == 1000  # untrusted: only a stricter number applies
    assert untrusted.permissions.deny == ["Read(.env)", "Shell(rm:*)"]


def test_one_key_in_two_spellings_across_files_is_one_key(tmp_path, paths):
    ws = tmp_path / "ws"
    _write(paths.user_settings, {"runtime": {"max_steps": 10}})
    extra = tmp_path / "extra.json"
    _write(extra, {"runtime": {"maxSteps": 30}})
    assert load_settings(ws, paths=paths, config_file=extra).runtime.max_steps == 30
    _write(extra, {"runtime": {"max_steps": 30}})
    _write(paths.user_settings, {"runtime": {"maxSteps": 10}})
    assert load_settings(ws, paths=paths, config_file=extra).runtime.max_steps == 30


def test_malformed_json_names_file_line_and_column(tmp_path, paths):
    paths.user_settings.parent.mkdir(parents=True)
    paths.user_settings.write_text('{\n  "permissions": [,]\n}')
    with pytest.raises(SettingsError, match=r"settings\.json:2:\d+: invalid JSON"):
        load_settings(tmp_path, paths=paths)


def test_wrong_types_name_the_file_and_key(tmp_path, paths):
    _write(SeepientPaths.project_settings(tmp_path), {"execution": {"defaultTimeoutMs": -5}})
    with pytest.raises(SettingsError, match=r"\.seepient/settings\.json: execution\.defaultTimeoutMs"):
        load_settings(tmp_path, paths=paths)
    _write(SeepientPaths.project_settings(tmp_path), ["not", "an", "object"])
    with pytest.raises(SettingsError, match="JSON object"):
        load_settings(tmp_path, paths=paths)


def test_missing_config_file_is_an_error(tmp_path, paths):
    with pytest.raises(SettingsError, match="no such settings file"):
        load_settings(tmp_path, paths=paths, config_file=tmp_path / "nope.json")


def test_seepient_home_from_environment(tmp_path):
    assert SeepientPaths.from_env({"SEEPIENT_HOME": str(tmp_path)}).audit_log == tmp_path / "audit.log"


def test_mode_aliases():
    assert normalise_mode("on-request") == "ask-untrusted"
    assert normalise_mode("bypass") == "autonomous-trusted"
    with pytest.raises(SettingsError, match="unknown consent mode"):
        normalise_mode("yolo")
