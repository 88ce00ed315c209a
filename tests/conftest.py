"""Shared test fixtures: where the repository, the shared corpora and the installed console scripts are."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# A ``seepient run`` a test starts on a terminal (tmux) would otherwise leave a warm process behind in the test's
# home (``surfaces/cli/warm_start/``); the warm start's own tests turn it on for themselves.
os.environ["SEEPIENT_WARM_START"] = "0"

# The shared test doubles' fixtures (the fake provider server, the corpus index), for every test package.
pytest_plugins = ["tests.support.plugin"]

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not (SHARED / "corpora").is_dir():
        raise RuntimeError(f"the shared corpora are missing: expected {SHARED}/corpora beside the repository")
    return SHARED
