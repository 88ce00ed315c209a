"""Running git in a test's repository with a fixed identity and nothing from the user's own git setup."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repository: Path, *args: str) -> str:
    """``git ARGS`` in ``repository``; its standard output, or ``CalledProcessError`` when it fails."""
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "HOME": str(repository),
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        ["git", *args], cwd=repository, env=env, check=True, capture_output=True, text=True
    ).stdout
