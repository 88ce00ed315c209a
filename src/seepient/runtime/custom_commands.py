"""The custom slash commands a session offers (the user's, and a trusted project's), for every surface that
lists them: the TUI's palette and an editor's ``available_commands_update`` over ACP."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seepient.config import SeepientPaths
    from seepient.context.commands import CommandSet
    from seepient.runtime.options import SessionOptions
    from seepient.runtime.session import Session


def session_paths(options: SessionOptions) -> SeepientPaths:
    from seepient.config import SeepientPaths

    return options.paths or SeepientPaths.from_env(dict(options.environ) if options.environ else None)


def load_custom_commands(session: Session, options: SessionOptions, reserved: Iterable[str]) -> CommandSet:
    """The user's commands and, when the user trusts the project as it is now, the project's (it reads files:
    call it in a thread)."""
    from seepient.config import SettingsError
    from seepient.context.commands import load_commands, project_trusted
    from seepient.policy.paths import PathGuard

    paths = session_paths(options)
    try:
        trusted = project_trusted(session.workspace, paths, options.project_trust)
    except SettingsError:
        trusted = False  # a project settings file that cannot be read is never trusted
    guard = PathGuard(session.workspace, seepient_home=paths.home)
    return load_commands(session.workspace, paths=paths, trusted=trusted, reserved=reserved, guard=guard)
