"""Finds the programs Seepient itself starts on the host (bubblewrap, git, ripgrep, MCP servers) so that none of
them is a file the model can write. A ``PATH`` that reaches into the workspace (an activated project virtualenv,
``./node_modules/.bin``, a relative entry) would otherwise let a planted ``.venv/bin/bwrap`` or ``git`` run on
the host the next time Seepient starts there."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""Where the distribution installs bubblewrap and git; looked at before ``PATH``."""


def _trusted_path_entries() -> str:
    cwd = os.path.realpath(os.getcwd()) if os.path.isdir(".") else "/nonexistent"
    kept = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry.startswith("/"):
            continue  # a relative entry names a folder of whatever the current directory is
        real = os.path.realpath(entry)
        if real == cwd or real.startswith(cwd.rstrip("/") + "/"):
            continue  # the folder Seepient was started in is usually the workspace
        kept.append(entry)
    return os.pathsep.join(kept)


def host_program(name: str) -> str | None:
    """A system tool (``bwrap``, ``git``): from the system folders first, else from ``PATH`` without relative
    entries and without folders inside the current directory."""
    return shutil.which(name, path=SYSTEM_PATH) or shutil.which(name, path=_trusted_path_entries())


def host_path(path: str, workspace: Path) -> str:
    """``path`` (a ``PATH`` value) for a program Seepient starts on the host (an MCP server, a hook): without
    relative or empty entries and without folders inside ``workspace``. The program itself is checked to lie
    outside the workspace, but what it starts in turn (``#!/usr/bin/env node``, ``uvx`` looking for a
    ``python``, a hook's ``black``) is looked up on this ``PATH``, and an activated project virtualenv or
    ``./node_modules/.bin`` there would make that a file the model wrote."""
    kept = [
        entry for entry in path.split(os.pathsep) if entry.startswith("/") and not inside(entry, workspace)
    ]
    return os.pathsep.join(kept) or SYSTEM_PATH


def inside(path: str | Path, workspace: Path) -> bool:
    """Whether ``path`` (as written or resolved) lies in ``workspace``."""
    root = os.path.realpath(workspace)
    for candidate in (os.path.normpath(os.path.abspath(path)), os.path.realpath(path)):
        if candidate == root or candidate.startswith(root.rstrip("/") + "/"):
            return True
    return False
