"""Writes "approve always for this project" answers into the user's own rules for the workspace
(``$SEEPIENT_HOME/projects/<workspace id>/settings.json``, see ``SeepientPaths.workspace_rules``).

The answer is the user's decision, so it lives in the user's state keyed by the workspace, never in the
repository's ``.seepient/settings.json`` (that file holds the team's rules, which count only once the user
trusts the project). The model can write neither: self-protection refuses it all of ``$SEEPIENT_HOME``. The
rule is added to ``permissions.allow``; every other key is kept as it was. The new file is written beside the
old one (mode 0600, in folders made 0700), fsynced and renamed over it, and the folder is fsynced, so a crash
at any moment leaves either the old rules or the new ones, never a torn file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from seepient.policy.rules import PolicyRuleError, parse_rule
from seepient.protocol.errors import ConfigurationError

_NEW_FILE_MODE = 0o600


class ProjectSettingsError(ConfigurationError):
    """The rules file cannot take the rule; the message names the file and what to fix."""


def add_allow_rule(settings_path: Path, rule: str) -> bool:
    """Append ``rule`` to ``permissions.allow`` in ``settings_path`` (created, with its folders, when missing).

    Returns False when the rule was already there (nothing is written). Raises ``ProjectSettingsError``
    when the file cannot be read as settings or cannot be replaced; the old file is then untouched.
    """
    try:
        parse_rule(rule, "the rule to add")
    except PolicyRuleError as exc:
        raise ProjectSettingsError(str(exc)) from exc
    directory = settings_path.parent
    if directory.is_symlink():
        raise ProjectSettingsError(
            f"{directory} is a symbolic link; Seepient writes these rules only into a real directory"
        )
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise ProjectSettingsError(
            f"{directory}: cannot open the settings directory ({exc.strerror})"
        ) from exc
    try:
        # Two sessions in one project may both answer "always": the lock keeps one from losing the
        # other's rule between its read and its rename.
        fcntl.flock(dir_fd, fcntl.LOCK_EX)
        settings, mode = _load(settings_path)
        allow = _allow_list(settings, settings_path)
        if rule in allow:
            return False
        allow.append(rule)
        text = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
        _replace_atomically(settings_path, text.encode("utf-8"), mode=mode, dir_fd=dir_fd)
        return True
    finally:
        os.close(dir_fd)


def _load(path: Path) -> tuple[dict[str, Any], int]:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {}, _NEW_FILE_MODE
    except OSError as exc:
        raise ProjectSettingsError(
            f"{path}: cannot read the rules for this project ({exc.strerror})"
        ) from exc
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise ProjectSettingsError(
            f"{path} is not a regular file; replace it with a JSON file to let Seepient add rules to it"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectSettingsError(f"{path}: cannot read the rules for this project ({exc})") from exc
    if not text.strip():
        return {}, stat.S_IMODE(info.st_mode)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProjectSettingsError(
            f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg}); fix it, then approve again"
        ) from exc
    if not isinstance(data, dict):
        raise ProjectSettingsError(f"{path}: settings must be a JSON object, not {type(data).__name__}")
    return data, stat.S_IMODE(info.st_mode)


def _allow_list(settings: dict[str, Any], path: Path) -> list[Any]:
    permissions = settings.setdefault("permissions", {})
    if not isinstance(permissions, dict):
        raise ProjectSettingsError(f"{path}: 'permissions' must be an object")
    allow = permissions.setdefault("allow", [])
    if not isinstance(allow, list):
        raise ProjectSettingsError(f"{path}: 'permissions.allow' must be a list of rule strings")
    return allow


def _replace_atomically(path: Path, data: bytes, *, mode: int, dir_fd: int) -> None:
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp_name, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise ProjectSettingsError(
            f"{path}: cannot write the rules for this project ({exc.strerror or exc})"
        ) from exc
    # The rename is durable only once the directory entry is on disk.
    os.fsync(dir_fd)
