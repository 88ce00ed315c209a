"""Small helpers for walking paths without following symlinks, shared by the committer and the reader."""

from __future__ import annotations

import os
import stat


def is_symlink_at(directory: int, name: str) -> bool:
    """Whether ``name`` inside the open ``directory`` is a symlink right now (False when it is gone)."""
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return False
