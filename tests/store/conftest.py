"""Store fixtures: every store test runs against SQLite and against a real PostgreSQL server."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from seepient.store import Store
from tests.store.postgres import create_database, postgres_cluster

_names = itertools.count()


@pytest.fixture(scope="session")
def postgres_sockets() -> Iterator[str]:
    with postgres_cluster() as sockets:
        yield sockets


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'seepient.db'}"
    else:
        url = create_database(request.getfixturevalue("postgres_sockets"), f"store_{next(_names)}")
    opened = await Store.open(url)
    try:
        yield opened
    finally:
        await opened.aclose()
