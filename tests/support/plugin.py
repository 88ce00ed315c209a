"""The pytest fixtures of the shared test doubles, registered for the whole suite by ``tests/conftest.py``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.otlp_receiver import OtlpReceiver
from tests.support.sse_server import SSEReplayServer, corpus_index


@pytest.fixture
def sse_server() -> Iterator[SSEReplayServer]:
    """A fake provider on a loopback port, answering every wire format from the replies a test queues."""
    with SSEReplayServer() as server:
        yield server


@pytest.fixture(scope="session")
def sse_index() -> dict[str, dict[str, Any]]:
    """The recorded provider transcripts of ``shared/corpora/sse``, keyed by file name."""
    return corpus_index()


@pytest.fixture
def otlp_receiver() -> Iterator[OtlpReceiver]:
    """A local OTLP/HTTP trace collector on a loopback port, decoding what it receives."""
    with OtlpReceiver() as receiver:
        yield receiver
