"""Reading a project's settings file as an attacker would plant it: links out of the workspace, FIFOs, huge or
malformed files, keys given twice, unknown keys and both spellings of one key; and the project schema kept in
step with the user's."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from seepient.config import SeepientPaths, SettingsError, load_settings
from seepient.config.project import (
    ABSENT,
    MAX_PROJECT_SETTINGS_BYTES,
    ProjectSettings,
    parse_project_settings,
    read_project_file,
)
from seepient.config.project_effect import KEYS
from seepient.config.settings import Settings


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "ws" / ".seepient").mkdir(parents=True)
    return tmp_path / "ws"


def _settings_path(workspace: Path) -> Path:
    return workspace / ".seepient" / "settings.json"


def _load(workspace: Path, **kwargs: Any) -> Settings:
    home = workspace.parent / "home"
    return load_settings(
        workspace, paths=SeepientPaths(home=home), managed_file=workspace.parent / "none.json", **kwargs
    )


def test_the_hash_is_of_the_bytes_read_and_a_missing_file_is_absent(workspace):
    assert read_project_file(workspace).sha256 == ABSENT
    content = b'{"permissions": {"deny": ["Read(.env)"]}}\n'
    _settings_path(workspace).write_bytes(content)
    read = read_project_file(workspace)
    assert read.content == content and read.sha256 == hashlib.sha256(content).hexdigest()
    assert read.data == {"permissions": {"deny": ["Read(.env)"]}}
    # An empty file is a file that sets nothing, not an absent one.
    _settings_path(workspace).write_bytes(b"")
    assert read_project_file(workspace).sha256 == hashlib.sha256(b"").hexdigest()


@pytest.mark.parametrize("target", ["outside", "inside"])
def test_a_linked_settings_file_is_refused_wherever_it_points(workspace, tmp_path, target):
    real = tmp_path / "planted.json" if target == "outside" else workspace / "team.json"
    real.write_text(json.dumps({"permissions": {"allow": ["Shell(curl:*)"]}}))
    _settings_path(workspace).symlink_to(real)
    with pytest.raises(SettingsError, match=r"settings\.json is a symbolic link .*never through a link"):
        _load(workspace)


def test_a_linked_seepient_folder_is_refused(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "settings.json").write_text(json.dumps({"permissions": {"mode": "bypass"}}))
    (workspace / ".seepient").symlink_to(elsewhere)
    with pytest.raises(SettingsError, match=r"\.seepient is a symbolic link"):
        _load(workspace)
    # A link to the user's own Seepient folder is no better: it would make the user's file the project's.
    (workspace / ".seepient").unlink()
    (workspace / ".seepient").symlink_to(tmp_path / "home")
    (tmp_path / "home").mkdir()
    with pytest.raises(SettingsError, match="symbolic link"):
        _load(workspace)


def test_a_fifo_is_refused_at_once_instead_of_hanging(workspace):
    os.mkfifo(_settings_path(workspace))
    done: list[BaseException] = []

    def read() -> None:
        try:
            read_project_file(workspace)
        except BaseException as exc:  # collected for the assertion below
            done.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "reading a FIFO planted as settings.json must not block"
    assert isinstance(done[0], SettingsError) and "not a regular file" in str(done[0])


def test_a_folder_a_huge_file_or_bad_text_is_refused(workspace):
    path = _settings_path(workspace)
    path.mkdir()
    with pytest.raises(SettingsError, match="not a regular file"):
        read_project_file(workspace)
    path.rmdir()
    path.write_bytes(b"{" + b" " * MAX_PROJECT_SETTINGS_BYTES + b"}")
    with pytest.raises(SettingsError, match="limited to"):
        read_project_file(workspace)
    path.write_bytes(b'{"permissions": {"deny": ["\xff"]}}')
    with pytest.raises(SettingsError, match="not UTF-8"):
        read_project_file(workspace)
    path.write_text("[1, 2]")
    with pytest.raises(SettingsError, match="JSON object"):
        read_project_file(workspace)
    (workspace / ".seepient" / "settings.json").unlink()
    (workspace / ".seepient").rmdir()
    (workspace / ".seepient").write_text("not a folder")
    with pytest.raises(SettingsError, match="not a folder"):
        read_project_file(workspace)


def test_a_key_given_twice_is_refused(workspace):
    # A reader sees the first "permissions"; JSON keeps the last, which would quietly allow everything.
    _settings_path(workspace).write_text(
        '{"permissions": {"deny": ["Shell"]}, "permissions": {"allow": ["Shell"]}}'
    )
    with pytest.raises(SettingsError, match="'permissions' is given twice"):
        _load(workspace)


@pytest.mark.parametrize(
    ("data", "where", "allowed"),
    [
        ({"permisions": {"deny": ["Shell(rm:*)"]}}, "permisions", "permissions"),
        ({"permissions": {"deny_rules": ["Shell(rm:*)"]}}, "permissions.deny_rules", "deny"),
        ({"runtime": {"MaxSteps": 5}}, "runtime.MaxSteps", "maxSteps"),
        ({"mcpServers": {"x": {"command": "a", "evil": 1}}}, "mcpServers.x.evil", "command"),
        ({"models": {"routes": {"text.standard": {"model": "a:b", "baseUrl": "x"}}}}, "baseUrl", "model"),
        ({"execution": {"sandbox_mode": "off"}}, "execution.sandbox_mode", "sandbox"),
    ],
)
def test_an_unknown_key_is_refused_naming_the_file_the_key_and_what_may_be_there(
    workspace, data, where, allowed
):
    _settings_path(workspace).write_text(json.dumps(data))
    with pytest.raises(SettingsError) as caught:
        _load(workspace)
    message = str(caught.value)
    assert str(_settings_path(workspace)) in message and where in message
    assert "not a key a project's settings may hold" in message and allowed in message


@pytest.mark.parametrize(
    "data",
    [
        {"runtime": {"maxSteps": 5, "max_steps": 500}},
        {"permissions": {"deny": ["x"]}, "mcpServers": {}, "mcp_servers": {}},
        {"models": {"providers": {}, "circuitBreaker": {}, "circuit_breaker": {}}},
        {"mcpServers": {"x": {"command": "a", "startupTimeoutMs": 5, "startup_timeout_ms": 9}}},
    ],
)
def test_both_spellings_of_one_key_are_refused(workspace, data):
    _settings_path(workspace).write_text(json.dumps(data))
    with pytest.raises(SettingsError, match="they are one key, keep one"):
        _load(workspace)


def test_bad_values_name_the_file_and_the_key(workspace):
    _settings_path(workspace).write_text(json.dumps({"runtime": {"max_steps": -1}}))
    with pytest.raises(SettingsError, match=r"settings\.json: runtime\.max_steps: .*greater than 0"):
        _load(workspace)
    _settings_path(workspace).write_text(json.dumps({"permissions": {"mode": "yolo"}}))
    with pytest.raises(SettingsError, match="unknown consent mode 'yolo'"):
        _load(workspace)
    _settings_path(workspace).write_text(json.dumps({"models": {"routes": {"text.fast": {"model": "a:b"}}}}))
    with pytest.raises(SettingsError, match="PURPOSE.TIER"):
        _load(workspace)


# -- the schema in step with the user's ----------------------------------------------------------------------

_MANAGED_ONLY = {"allow_managed_rules_only", "disabled_modes"}


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _pairs(user: type[BaseModel], project: type[BaseModel], where: str = "") -> list[tuple[str, Any, Any]]:
    out = []
    for name, field in user.model_fields.items():
        out.append((f"{where}{field.alias or name}", field, project.model_fields.get(name)))
    return out


def test_every_user_settings_key_is_known_to_the_project_schema_in_the_same_spellings():
    """A key added to the user's schema must be classified for projects too (docs/security.md says how); until it
    is, a project file holding it is refused, which is safe but unhelpful."""
    missing = []
    sections = [("", Settings, ProjectSettings)]
    while sections:
        where, user, project = sections.pop()
        for key, user_field, project_field in _pairs(user, project, where):
            if key.rsplit(".", 1)[-1] in ("allowManagedRulesOnly", "disabledModes"):
                continue
            if project_field is None or project_field.alias != user_field.alias:
                missing.append(key)
                continue
            if KEYS.get(key) is not None:
                continue
            inner_user, inner_project = _model_of(user_field.annotation), _model_of(project_field.annotation)
            if inner_user is not None and inner_project is not None:
                sections.append((f"{key}.", inner_user, inner_project))
            else:
                missing.append(key)
    assert missing == [], f"classify these keys in config/project.py and config/project_effect.py: {missing}"


def test_the_project_schema_checks_values_as_the_user_schema_does():
    """The explicit project fields repeat the user fields' bounds; this keeps them from drifting apart."""
    drift = []
    for section in ("permissions", "models", "execution", "runtime", "context", "lsp", "subagents"):
        user = _model_of(Settings.model_fields[section].annotation)
        project = _model_of(ProjectSettings.model_fields[section].annotation)
        assert user is not None and project is not None
        for name, field in project.model_fields.items():
            if name not in user.model_fields or field.annotation is Any:
                continue
            if sorted(map(repr, field.metadata)) != sorted(map(repr, user.model_fields[name].metadata)):
                drift.append(f"{section}.{name}")
    assert drift == []


def test_parse_takes_both_spellings(workspace):
    for data in ({"runtime": {"maxSteps": 3}}, {"runtime": {"max_steps": 3}}):
        _settings_path(workspace).write_text(json.dumps(data))
        parsed = parse_project_settings(read_project_file(workspace))
        assert parsed.runtime is not None and parsed.runtime.max_steps == 3
