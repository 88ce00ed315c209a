"""Custom slash commands: markdown files whose text becomes the prompt (``$ARGUMENTS`` replaced by what follows
the command). The user's live in ``<seepient home>/commands/``; a project's in ``.agents/commands/`` (or
``.claude/commands/`` where that is absent) and, being files of a repository someone else may have written,
load only once the user trusts the project. Front matter may describe a command; it never grants anything.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from seepient.config import SeepientPaths
from seepient.config.project import read_project_file
from seepient.config.trust import TrustStore
from seepient.protocol import PathAccess, PathDenied

PROJECT_DIRS = (Path(".agents") / "commands", Path(".claude") / "commands")
USER_DIR = "commands"
MAX_COMMAND_BYTES = 64 * 1024
MAX_COMMANDS = 200
ARGUMENTS = "$ARGUMENTS"
_GRANTING_KEYS = ("allowed-tools", "allowedTools", "permissions", "model", "mode")

CommandScope = Literal["user", "project"]


@dataclass(frozen=True)
class CustomCommand:
    name: str
    """What follows the ``/``; a file in a subfolder is ``folder:file``."""
    description: str
    body: str
    scope: CommandScope
    path: Path
    argument_hint: str = ""

    def prompt(self, arguments: str) -> str:
        """The prompt this command sends: ``$ARGUMENTS`` replaced, or the arguments added after the text."""
        arguments = arguments.strip()
        if ARGUMENTS in self.body:
            return self.body.replace(ARGUMENTS, arguments)
        return f"{self.body.rstrip()}\n\n{arguments}" if arguments else self.body


@dataclass(frozen=True)
class CommandSet:
    commands: dict[str, CustomCommand] = field(default_factory=dict)
    notices: tuple[str, ...] = ()


def project_commands_dir(workspace: Path) -> Path | None:
    """``.agents/commands`` when the project has one, else ``.claude/commands``, else None."""
    for relative in PROJECT_DIRS:
        if (workspace / relative).is_dir():
            return workspace / relative
    return None


def project_trusted(workspace: Path, paths: SeepientPaths, decided: bool | None = None) -> bool:
    """Whether the user trusts ``workspace`` as its settings are now (``decided`` when a surface knows)."""
    if decided is not None:
        return decided
    return TrustStore(paths.trust_store).is_trusted(workspace, read_project_file(workspace).sha256)


def load_commands(
    workspace: Path,
    *,
    paths: SeepientPaths,
    trusted: bool,
    reserved: Iterable[str] = (),
    guard: PathAccess | None = None,
) -> CommandSet:
    """The user's commands, then the project's when ``trusted``; a name the user or a built-in already has is
    kept for them (a repository must not replace a command the user relies on). ``guard`` refuses what
    ``read_file`` would refuse (a project's command linked to ``~/.ssh/id_rsa`` is not read)."""
    notices: list[str] = []
    taken = set(reserved)
    commands: dict[str, CustomCommand] = {}
    user_dir = paths.home / USER_DIR
    for command in _scan(user_dir, "user", notices, root=user_dir, guard=None):
        _add(command, commands, taken, notices)
    project_dir = project_commands_dir(workspace)
    if project_dir is not None:
        shown = project_dir.relative_to(workspace)
        if not trusted:
            notices.append(
                f"the commands in {shown}/ were not loaded: the project is not trusted "
                f"(`seepient trust {workspace}` trusts it)"
            )
        else:
            for command in _scan(project_dir, "project", notices, root=workspace, guard=guard):
                _add(command, commands, taken, notices)
    return CommandSet(commands, tuple(notices))


def _add(
    command: CustomCommand, commands: dict[str, CustomCommand], taken: set[str], notices: list[str]
) -> None:
    if command.name in taken:
        notices.append(f"{command.path}: /{command.name} is already a command; this one was not loaded")
        return
    if len(commands) >= MAX_COMMANDS:
        notices.append(f"{command.path}: more than {MAX_COMMANDS} commands; the rest were not loaded")
        return
    taken.add(command.name)
    commands[command.name] = command


def _scan(
    directory: Path, scope: CommandScope, notices: list[str], *, root: Path, guard: PathAccess | None
) -> list[CustomCommand]:
    if not directory.is_dir():
        return []
    found: list[CustomCommand] = []
    real_root = os.path.realpath(root)
    for current, folders, files in os.walk(directory):
        folders.sort()
        for name in sorted(files):
            if not name.endswith(".md"):
                continue
            path = Path(current) / name
            relative = path.relative_to(directory).with_suffix("")
            command_name = ":".join(relative.parts)
            problem = _refusal(path, real_root, guard)
            if problem is None and any(char.isspace() for char in command_name):
                problem = "its name has a space, so it could not be typed as a command"
            if problem is None:
                try:
                    found.append(_parse(path, command_name, scope, notices))
                    continue
                except (OSError, UnicodeDecodeError, ValueError) as exc:
                    problem = str(exc)
            notices.append(f"{path}: not loaded: {problem}")
    return found


def _refusal(path: Path, real_root: str, guard: PathAccess | None) -> str | None:
    real = os.path.realpath(path)
    if not (real == real_root or real.startswith(real_root.rstrip("/") + "/")):
        return f"it resolves outside {real_root}"
    if guard is not None:
        try:
            guard.for_read(real)
        except PathDenied as exc:
            return exc.reason
    info = os.stat(real)
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size > MAX_COMMAND_BYTES:
        return f"larger than {MAX_COMMAND_BYTES // 1024} KB"
    return None


def _parse(path: Path, name: str, scope: CommandScope, notices: list[str]) -> CustomCommand:
    text = path.read_bytes().decode("utf-8")
    front, body = _split_front_matter(text)
    granting = sorted(key for key in front if key in _GRANTING_KEYS)
    if granting:
        notices.append(
            f"{path}: {', '.join(granting)} in its front matter is ignored: a command never grants a "
            "permission or changes the model or mode"
        )
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        description = next((line.strip() for line in body.splitlines() if line.strip()), "")[:80]
    hint = front.get("argument-hint")
    return CustomCommand(
        name=name,
        description=" ".join(description.split()),
        body=body,
        scope=scope,
        path=path,
        argument_hint=hint if isinstance(hint, str) else "",
    )


def _split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---\n") and not text.startswith("---\r\n"):
        return {}, text
    end = text.find("\n---", 3)
    if end < 0:
        raise ValueError("its front matter is never closed: add a '---' line after it")
    import yaml

    try:
        data = yaml.safe_load(text[text.index("\n") + 1 : end]) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"its front matter is not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ValueError("its front matter must be a mapping (description: …)")
    rest = text[end + 4 :]
    return data, rest.split("\n", 1)[1] if "\n" in rest else ""
