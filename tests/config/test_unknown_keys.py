"""Unknown settings keys: named with the file, the dotted key and a "did you mean"; a warning in the user's and the
``--config`` file, an error in the managed file and wherever permission rules are concerned, and the project
file as strict as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seepient.config import SeepientPaths, SettingsError, load_settings
from seepient.config.settings import Settings
from seepient.config.unknown_keys import find_unknown_keys


@pytest.fixture
def paths(tmp_path: Path) -> SeepientPaths:
    return SeepientPaths(home=tmp_path / "home")


@pytest.fixture
def no_managed(tmp_path: Path) -> Path:
    return tmp_path / "no-managed.json"


def _write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("data", "path", "suggestion"),
    [
        ({"runtime": {"maxStep": 3}}, "runtime.maxStep", "runtime.maxSteps"),
        ({"runtime": {"max_step": 3}}, "runtime.max_step", "runtime.max_steps"),
        (
            {"models": {"providers": {"local": {"baseURL": "http://x"}}}},
            "models.providers.local.baseURL",
            None,
        ),
        ({"hooks": {"preToolUse": [{"command": "x", "matchr": "y"}]}}, "hooks.preToolUse[0].matchr", None),
        ({"mcpServers": {"gh": {"command": "x", "arg": []}}}, "mcpServers.gh.arg", "mcpServers.gh.args"),
        ({"windowTokens": 5000}, "windowTokens", "context.windowTokens"),
        ({"model": "openai:gpt-4.1"}, "model", "models.default"),
        ({"contxt": {}}, "contxt", "context"),
        ({"frobnicate": 1}, "frobnicate", None),
    ],
)
def test_each_unknown_key_is_named_by_its_dotted_path_with_the_key_meant(data, path, suggestion):
    found = find_unknown_keys(data, Settings, "f.json")
    assert [key.path for key in found] == [path]
    if suggestion is not None:
        assert found[0].suggestion == suggestion
    assert str(found[0]).startswith(f"f.json: {path}: unknown key, ignored")


def test_a_case_slip_suggests_the_spelling_the_schema_has():
    (found,) = find_unknown_keys({"models": {"providers": {"l": {"baseURL": "x"}}}}, Settings, "f")
    assert found.suggestion == "models.providers.l.baseUrl"


def test_known_keys_in_either_spelling_and_free_form_maps_are_not_reported():
    data = {
        "$schema": "https://example.invalid/schema.json",
        "server": {"principals": {}},
        "runtime": {"max_steps": 3, "maxParallelTools": 2},
        "mcpServers": {"gh": {"command": "x", "env": {"ANY_NAME": "1"}, "headers": {"X-Any": "1"}}},
        "lsp": {"servers": {"py": None}},
        "instructions": ["a", "b"],
        "models": {"routes": {"text.standard": {"model": "a:b", "fallbackModels": []}}},
    }
    assert find_unknown_keys(data, Settings, "f") == []


def test_unknown_keys_of_the_user_file_are_warnings_and_the_run_goes_on(tmp_path, paths, no_managed):
    _write(paths.user_settings, {"runtime": {"maxStep": 3, "maxSteps": 4}, "colour": "blue"})
    settings = load_settings(tmp_path, paths=paths, managed_file=no_managed)
    assert settings.runtime.max_steps == 4
    assert [str(key) for key in settings.unknown_keys] == [
        f"{paths.user_settings}: runtime.maxStep: unknown key, ignored; did you mean 'runtime.maxSteps'?",
        f"{paths.user_settings}: colour: unknown key, ignored",
    ]


def test_unknown_keys_of_a_config_file_name_that_file(tmp_path, paths, no_managed):
    extra = _write(tmp_path / "extra.json", {"execution": {"sandBox": "off"}})
    settings = load_settings(tmp_path, paths=paths, config_file=extra, managed_file=no_managed)
    (key,) = settings.unknown_keys
    assert (
        key.file == str(extra) and key.path == "execution.sandBox" and key.suggestion == "execution.sandbox"
    )
    assert settings.execution.sandbox == "auto"  # the misspelt key changed nothing


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"permisions": {"deny": ["Read(.env)"]}}, "permisions: unknown key; did you mean 'permissions'?"),
        (
            {"permissions": {"denny": ["Read(.env)"]}},
            "permissions.denny: unknown key; did you mean 'permissions.deny'?",
        ),
        ({"permissions": {"defaultMode": "auto"}}, "did you mean 'permissions.mode'?"),
        ({"deny": ["Read(.env)"]}, "deny: unknown key; did you mean 'permissions.deny'?"),
    ],
)
def test_a_key_in_or_meant_for_the_permission_rules_stops_the_run(tmp_path, paths, no_managed, data, named):
    """A deny rule lost to a typo would loosen policy with nothing but a warning scrolled past."""
    _write(paths.user_settings, data)
    with pytest.raises(SettingsError) as caught:
        load_settings(tmp_path, paths=paths, managed_file=no_managed)
    assert str(caught.value).startswith(f"{paths.user_settings}: ") and named in str(caught.value)
    extra = _write(tmp_path / "extra.json", data)
    paths.user_settings.unlink()
    with pytest.raises(SettingsError, match="did you mean"):
        load_settings(tmp_path, paths=paths, config_file=extra, managed_file=no_managed)


def test_any_unknown_key_of_the_managed_file_is_an_error(tmp_path, paths):
    managed = _write(tmp_path / "managed.json", {"execution": {"sandbox": "auto", "sandbx": "off"}})
    with pytest.raises(SettingsError) as caught:
        load_settings(tmp_path, paths=paths, managed_file=managed)
    message = str(caught.value)
    assert f"{managed}: execution.sandbx: unknown key; did you mean 'execution.sandbox'?" in message
    assert "managed settings file must hold only keys Seepient reads" in message


def test_the_project_file_stays_strict_and_now_says_what_was_meant(tmp_path, paths, no_managed):
    """A project's unknown key was and is an error: the untrusted-project rules are checked key by key."""
    ws = tmp_path / "ws"
    _write(SeepientPaths.project_settings(ws), {"runtime": {"maxStep": 3}})
    with pytest.raises(SettingsError) as caught:
        load_settings(ws, paths=paths, managed_file=no_managed)
    message = str(caught.value)
    assert "runtime.maxStep: not a key a project's settings may hold; did you mean 'maxSteps'?" in message
    _write(SeepientPaths.project_settings(ws), {"permisions": {"allow": ["Shell"]}})
    with pytest.raises(SettingsError, match="did you mean 'permissions'"):
        load_settings(ws, paths=paths, managed_file=no_managed, project_trust=True)
