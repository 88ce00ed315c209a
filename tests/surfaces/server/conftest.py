"""A real server (uvicorn on a free loopback port, SQLite in a temp dir) with tokens for two principals."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest

from seepient.config import SeepientPaths
from seepient.store import Store, database_url
from seepient.surfaces.server.run import ServerOptions, running_server
from tests.store.postgres import postgres_cluster
from tests.support.scripts import write_script


@dataclass
class Served:
    url: str
    root: Path
    workspace: Path
    home: Path
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, principal: str | None = "alice", **kw: Any) -> httpx2.AsyncClient:
        headers = {"Authorization": f"Bearer {self.tokens[principal]}"} if principal else {}
        return httpx2.AsyncClient(base_url=self.url, headers=headers, trust_env=False, timeout=20, **kw)

    def script(self, turns: list[dict[str, Any]], name: str = "script.yaml") -> Path:
        return write_script(self.root / name, turns)


async def start(
    tmp_path: Path,
    *,
    config: dict[str, Any] | None = None,
    principals: tuple[str, ...] = ("alice", "bob"),
    database: str | None = None,
) -> tuple[Served, Any]:
    root = tmp_path / "root"
    workspace = root / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    home = tmp_path / "seepient-home"
    db = database or f"sqlite:///{tmp_path / 'server.db'}"
    store = await Store.open(database_url(db, home))
    tokens = {name: (await store.create_token(name)).secret for name in principals}
    await store.aclose()
    config_file = None
    if config is not None:
        config_file = tmp_path / "server.json"
        config_file.write_text(json.dumps(config))
    options = ServerOptions(
        host="127.0.0.1",
        port=0,
        config_file=config_file,
        database=db,
        cwd=root,
        paths=SeepientPaths(home=home),
    )
    context = running_server(options)
    url = await context.__aenter__()
    return Served(url=url, root=root, workspace=workspace, home=home, tokens=tokens), context


@pytest.fixture(scope="session")
def postgres_sockets() -> Iterator[str]:
    with postgres_cluster() as sockets:
        yield sockets


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    server, context = await start(tmp_path)
    try:
        yield server
    finally:
        await context.__aexit__(None, None, None)
