"""Permission rules keep their source: managed > command-line > project > user, with file and position."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seepient.config import SeepientPaths, SettingsError, load_settings
from seepient.config.settings import (
    MANAGED_SETTINGS_ENV,
    PermissionSettings,
    managed_settings_path,
)


@pytest.fixture
def paths(tmp_path: Path) -> SeepientPaths:
    return SeepientPaths(home=tmp_path / "home")


def _write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _rules(kind_allow_ask_deny: dict[str, list[str]]) -> dict[str, object]:
    return {"permissions": kind_allow_ask_deny}


def test_every_source_is_kept_apart_in_precedence_order(tmp_path, paths):
    ws = tmp_path / "ws"
    user = _write(paths.user_settings, _rules({"allow": ["Shell(u)"], "deny": ["Read(u)"]}))
    project = _write(SeepientPaths.project_settings(ws), _rules({"ask": ["Shell(p)"]}))
    extra = _write(tmp_path / "extra.json", _rules({"allow": ["Shell(c)"]}))
    managed = _write(tmp_path / "managed.json", _rules({"deny": ["Shell(m)"]}))
    settings = load_settings(
        ws,
        paths=paths,
        config_file=extra,
        overrides=_rules({"deny": ["Shell(f)"]}),
        managed_file=managed,
    )
    sources = settings.permissions.rule_sources
    assert [(s.kind, s.path) for s in sources.sources] == [
        ("managed", managed),
        ("command-line", None),  # flags typed for this run outrank the --config file
        ("command-line", extra),
        ("project", project),
        ("user", user),
    ]
    assert sources.sources[0].position("deny", 0) == f"{managed}: permissions.deny[0]"
    assert sources.sources[1].position("deny", 0) == "command-line flags: permissions.deny[0]"
    assert sources.sources[0].label == f"managed settings {managed}"
    # The merged lists still hold every rule, as before.
    assert sorted(settings.permissions.deny) == ["Read(u)", "Shell(f)", "Shell(m)"]


def test_managed_scalars_win_over_every_other_file(tmp_path, paths):
    ws = tmp_path / "ws"
    _write(SeepientPaths.project_settings(ws), {"permissions": {"mode": "autonomous-trusted"}})
    managed = _write(tmp_path / "managed.json", {"permissions": {"mode": "always-ask"}})
    settings = load_settings(
        ws, paths=paths, overrides={"permissions": {"mode": "ask-untrusted"}}, managed_file=managed
    )
    assert settings.permissions.mode == "always-ask"


def test_the_managed_file_comes_from_the_environment_or_etc(tmp_path, monkeypatch):
    assert managed_settings_path({}) == Path("/etc/seepient/managed-settings.json")
    assert managed_settings_path({MANAGED_SETTINGS_ENV: str(tmp_path / "m.json")}) == tmp_path / "m.json"
    managed = _write(tmp_path / "m.json", _rules({"deny": ["Shell(rm:*)"]}))
    monkeypatch.setenv(MANAGED_SETTINGS_ENV, str(managed))
    settings = load_settings(tmp_path, paths=SeepientPaths(home=tmp_path / "h"))
    assert settings.permissions.rule_sources.sources[0].kind == "managed"
    assert settings.permissions.rule_sources.managed_path == managed


def test_a_missing_managed_file_means_no_managed_settings(tmp_path, paths):
    settings = load_settings(tmp_path, paths=paths, managed_file=tmp_path / "absent.json")
    assert settings.permissions.rule_sources.sources == ()
    assert settings.permissions.rule_sources.managed_path is None


def test_a_broken_managed_file_stops_the_run(tmp_path, paths):
    managed = tmp_path / "managed.json"
    managed.write_text("{not json")
    with pytest.raises(SettingsError, match=r"managed\.json:1:\d+: invalid JSON"):
        load_settings(tmp_path, paths=paths, managed_file=managed)
    _write(managed, {"permissions": {"deny": [42]}})
    with pytest.raises(SettingsError, match=r"managed\.json: permissions\.deny\.0"):
        load_settings(tmp_path, paths=paths, managed_file=managed)


@pytest.mark.parametrize("key", ["allowManagedRulesOnly", "disabledModes"])
@pytest.mark.parametrize("where", ["user", "project", "config", "flags"])
def test_lock_down_keys_belong_to_the_managed_file_only(tmp_path, paths, key, where):
    ws = tmp_path / "ws"
    value: object = True if key == "allowManagedRulesOnly" else ["autonomous-trusted"]
    data = {"permissions": {key: value}}
    kwargs: dict[str, object] = {}
    if where == "user":
        _write(paths.user_settings, data)
    elif where == "project":
        _write(SeepientPaths.project_settings(ws), data)
    elif where == "config":
        kwargs["config_file"] = _write(tmp_path / "extra.json", data)
    else:
        kwargs["overrides"] = data
    with pytest.raises(SettingsError, match=f"permissions.{key}: only the managed settings file"):
        load_settings(ws, paths=paths, managed_file=tmp_path / "none.json", **kwargs)  # type: ignore[arg-type]


def test_managed_lock_down_is_read(tmp_path, paths):
    managed = _write(
        tmp_path / "managed.json",
        {"permissions": {"allowManagedRulesOnly": True, "disabledModes": ["bypass", "auto"]}},
    )
    sources = load_settings(tmp_path, paths=paths, managed_file=managed).permissions.rule_sources
    assert sources.allow_managed_rules_only is True
    assert sources.disabled_modes == ("autonomous-trusted", "auto")  # aliases resolved


def test_an_unknown_disabled_mode_names_the_managed_file(tmp_path, paths):
    managed = _write(tmp_path / "managed.json", {"permissions": {"disabledModes": ["ask-untrusted", "yolo"]}})
    with pytest.raises(
        SettingsError, match=r"managed\.json: permissions\.disabledModes\[1\]: unknown consent mode"
    ):
        load_settings(tmp_path, paths=paths, managed_file=managed)


def test_settings_built_by_hand_are_one_unnamed_source():
    permissions = PermissionSettings(allow=["Shell(ls)"], deny=["Read(.env)"])
    [source] = permissions.rule_sources.sources
    assert source.kind == "settings" and source.position("deny", 0) == "permissions.deny[0]"
    remembered = permissions.with_sources(permissions.rule_sources)
    assert remembered.rule_sources == permissions.rule_sources and remembered.allow == ["Shell(ls)"]
