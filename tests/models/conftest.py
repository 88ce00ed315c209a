"""Fixtures for model adapter tests: the local SSE replay server and the recorded-transcript index."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.models.sse_server import SSEReplayServer, corpus_index


@pytest.fixture
def sse_server() -> Iterator[SSEReplayServer]:
    with SSEReplayServer() as server:
        yield server


@pytest.fixture(scope="session")
def sse_index() -> dict[str, dict[str, Any]]:
    return corpus_index()
