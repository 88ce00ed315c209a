"""The server on a real PostgreSQL database: a turn with an approval, tenancy, and a restart that keeps the
session, its turns and its events."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.store.postgres import create_database
from tests.surfaces.server.conftest import start


async def test_a_server_on_postgresql_keeps_sessions_across_a_restart(
    tmp_path: Path, postgres_sockets: str
) -> None:
    database = create_database(postgres_sockets, "server_restart")
    served, context = await start(tmp_path, database=database)
    script = served.script(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "pg.txt", "content": "pg\n"}}]},
            {"text": "ok"},
        ]
    )
    try:
        async with served.client() as alice, served.client("bob") as bob:
            created = await alice.post(
                "/v1/sessions",
                json={"workspace": str(served.workspace), "model": f"replay:{script}", "mode": "always-ask"},
            )
            session_id = created.json()["id"]
            turn = asyncio.create_task(
                alice.post(f"/v1/sessions/{session_id}/messages?wait=true", json={"prompt": "write"})
            )
            for _ in range(500):
                pending = (await alice.get(f"/v1/sessions/{session_id}")).json()["pending_approvals"]
                if pending:
                    break
                await asyncio.sleep(0.02)
            assert (await bob.get(f"/v1/sessions/{session_id}")).status_code == 404
            await alice.post(
                f"/v1/sessions/{session_id}/approvals/{pending[0]['request_id']}",
                json={"decision": "approve_once"},
            )
            assert (await turn).json()["text"] == "ok"
            before = (await alice.get(f"/v1/sessions/{session_id}/events?follow=false")).text
    finally:
        await context.__aexit__(None, None, None)
    assert (served.workspace / "pg.txt").read_text() == "pg\n"

    moved, context = await start(tmp_path / "elsewhere", database=database, principals=())
    moved.tokens = served.tokens
    try:
        async with moved.client() as alice:
            # Started elsewhere, the server no longer grants that workspace: reopening re-checks tenancy.
            refused = await alice.get(f"/v1/sessions/{session_id}/events?follow=false")
    finally:
        await context.__aexit__(None, None, None)
    assert refused.status_code == 403 and "outside the roots" in refused.text

    again, context = await start(tmp_path, database=database, principals=())
    again.tokens = served.tokens
    try:
        async with again.client() as alice:
            detail = (await alice.get(f"/v1/sessions/{session_id}")).json()
            after = (await alice.get(f"/v1/sessions/{session_id}/events?follow=false")).text
    finally:
        await context.__aexit__(None, None, None)
    assert [(t["prompt"], t["status"], t["reply"]) for t in detail["turns"]] == [("write", "completed", "ok")]
    assert after == before
