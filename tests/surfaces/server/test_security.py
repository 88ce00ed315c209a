"""Attacks on the server: missing, forged and foreign tokens, oversized bodies, floods, tenancy escapes
through paths, symlinks, modes and model specs, and an exposed bind without tokens."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx2
import pytest

from seepient.config import SeepientPaths
from seepient.store import Store
from seepient.surfaces.server.run import ServerOptions, ServerStartError, prepare
from tests.surfaces.server.conftest import Served, start


def _authenticated_routes(document: dict) -> list[tuple[str, str]]:
    routes = []
    for path, methods in document["paths"].items():
        for method in methods:
            if path not in ("/v1/health",):
                routes.append(
                    (method.upper(), path.replace("{session_id}", "ses_x").replace("{request_id}", "apr_x"))
                )
    return routes


async def test_every_route_but_health_needs_a_valid_token(served: Served) -> None:
    async with served.client(None) as anonymous:
        document = (await anonymous.get("/openapi.json")).json()
        routes = _authenticated_routes(document)
        assert len(routes) >= 9
        for bad in (None, "Bearer", "Bearer nope", "Basic YWxpY2U6eA==", f"Bearer {served.tokens['alice']}x"):
            headers = {"Authorization": bad} if bad else {}
            for method, path in routes:
                response = await anonymous.request(method, path, headers=headers, json={})
                assert response.status_code == 401, (bad, method, path, response.status_code)
                assert response.headers["www-authenticate"] == "Bearer"


async def test_another_principal_gets_404_for_every_session_route(served: Served) -> None:
    script = served.script(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
            {"text": "ok"},
        ]
    )
    async with served.client("alice") as alice, served.client("bob") as bob:
        created = await alice.post(
            "/v1/sessions",
            json={"workspace": str(served.workspace), "model": f"replay:{script}", "mode": "always-ask"},
        )
        session_id = created.json()["id"]
        await alice.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "go"})
        probes = [
            ("GET", f"/v1/sessions/{session_id}", None),
            ("DELETE", f"/v1/sessions/{session_id}", None),
            ("POST", f"/v1/sessions/{session_id}/messages", {"prompt": "hijack"}),
            ("GET", f"/v1/sessions/{session_id}/events?follow=false", None),
            ("POST", f"/v1/sessions/{session_id}/approvals/apr_x", {"decision": "approve_once"}),
            ("POST", f"/v1/sessions/{session_id}/interrupt", None),
        ]
        for method, path, body in probes:
            response = await bob.request(method, path, json=body)
            assert response.status_code == 404, (method, path, response.text)
        missing = await alice.get("/v1/sessions/ses_doesnotexist")
        assert missing.json()["detail"] == "no session ses_doesnotexist"
        foreign = await bob.get(f"/v1/sessions/{session_id}")
        assert foreign.json()["detail"] == f"no session {session_id}"  # indistinguishable from absent
        assert (await bob.get("/v1/sessions")).json() == []
        assert (await alice.get(f"/v1/sessions/{session_id}")).json()["status"] == "running"
        await alice.post(f"/v1/sessions/{session_id}/interrupt")


async def test_tokens_never_reach_the_logs(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with served.client("alice") as client:
        await client.get("/v1/sessions")
        await client.get("/v1/sessions/ses_nope")
    async with served.client(None) as anonymous:
        await anonymous.get("/v1/sessions", headers={"Authorization": "Bearer spt_0000_forged-secret"})
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert served.tokens["alice"] not in logged and "forged-secret" not in logged


async def test_bodies_over_the_limit_are_refused(tmp_path: Path) -> None:
    served, context = await start(
        tmp_path, config={"server": {"maxRequestBytes": 2048, "defaultPrincipal": {}}}
    )
    try:
        async with served.client() as client:
            big = {"workspace": "x" * 4000, "model": "m:x"}
            assert (await client.post("/v1/sessions", json=big)).status_code == 413

            async def chunks():  # no Content-Length: the limit must hold while reading
                for _ in range(10):
                    yield b" " * 1000

            streamed = await client.post(
                "/v1/sessions", content=chunks(), headers={"Content-Type": "application/json"}
            )
            assert streamed.status_code == 413
            assert "limit of 2048 bytes" in streamed.json()["detail"]
    finally:
        await context.__aexit__(None, None, None)


async def test_a_token_over_its_rate_gets_429_and_others_are_unaffected(tmp_path: Path) -> None:
    config = {"server": {"rateLimit": {"requestsPerSecond": 0.01, "burst": 5}, "defaultPrincipal": {}}}
    served, context = await start(tmp_path, config=config)
    try:
        async with served.client("alice") as alice, served.client("bob") as bob:
            codes = [(await alice.get("/v1/sessions")).status_code for _ in range(8)]
            assert codes[:5] == [200] * 5 and codes[5:] == [429] * 3
            limited = await alice.get("/v1/sessions")
            assert int(limited.headers["retry-after"]) >= 1
            assert (await bob.get("/v1/sessions")).status_code == 200
    finally:
        await context.__aexit__(None, None, None)


async def test_binding_beyond_loopback_without_tokens_is_refused(tmp_path: Path) -> None:
    options = ServerOptions(
        host="0.0.0.0",
        database=f"sqlite:///{tmp_path / 'db'}",
        cwd=tmp_path,
        paths=SeepientPaths(home=tmp_path),
    )
    with pytest.raises(ServerStartError, match="not a loopback address, with no token"):
        await prepare(options)
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'db'}")
    await store.create_token("ops")
    await store.aclose()
    state, config = await prepare(options)
    try:
        grant = config.grant_for("anyone")
        assert grant is not None and grant.max_mode == "ask-untrusted" and not grant.allow_replay
    finally:
        await state.store.aclose()


class TestTenancy:
    async def _create(
        self, client: httpx2.AsyncClient, workspace: str, model: str, mode: str | None = None
    ) -> httpx2.Response:
        return await client.post("/v1/sessions", json={"workspace": workspace, "model": model, "mode": mode})

    async def test_workspaces_outside_the_roots_are_refused(self, served: Served, tmp_path: Path) -> None:
        script = served.script([{"text": "hi"}])
        outside = tmp_path / "outside"
        outside.mkdir()
        (served.root / "escape").symlink_to(outside)
        (served.workspace / "up").symlink_to("../..")
        attempts = [
            str(outside),
            f"{served.workspace}/../../outside",
            str(served.root / "escape"),
            str(served.workspace / "up"),
            "/",
            "/etc",
            "ws",  # relative
            "~",
            "~root",
            "~0",  # an unknown user: found by schemathesis as a 500
            str(served.workspace / ("n" * 300)),  # a name too long for the file system
            str(served.root) + "/../root-sibling",
        ]
        async with served.client() as client:
            for workspace in attempts:
                response = await self._create(client, workspace, f"replay:{script}")
                assert response.status_code == 403, (workspace, response.text)
            ok = await self._create(client, f"{served.root}/ws/../ws", f"replay:{script}")
            assert ok.status_code == 201 and ok.json()["workspace"] == str(served.workspace)

    async def test_replay_specs_cannot_read_the_servers_files(self, served: Served, tmp_path: Path) -> None:
        secret = tmp_path / "secret.yaml"
        secret.write_text("- text: server secret\n")
        (served.root / "link.yaml").symlink_to(secret)
        async with served.client() as client:
            for model in (
                f"replay:{secret}",
                f"replay:{served.root}/../secret.yaml",
                f"replay:{served.root / 'link.yaml'}",
                "replay:/etc/passwd",
                "replay:secret.yaml",
                "replay:~/secret.yaml",
                "replay:~0/x",
                f"replay:{served.root / ('n' * 300)}",
                "openai:gpt-4.1",  # not offered without a config
                "nonsense",
            ):
                response = await self._create(client, str(served.workspace), model)
                assert response.status_code == 403, (model, response.text)
                assert "server secret" not in response.text

    async def test_the_config_caps_modes_models_and_replay(self, tmp_path: Path) -> None:
        roots = tmp_path / "root"
        config = {
            "server": {
                "principals": {
                    "alice": {
                        "roots": [str(roots)],
                        "maxMode": "ask-untrusted",
                        "models": ["openai:gpt-4.1"],
                    },
                    "bob": {"roots": [str(roots / "ws")], "maxMode": "auto", "allowReplay": True},
                }
            }
        }
        served, context = await start(tmp_path, config=config, principals=("alice", "bob", "carol"))
        script = served.script([{"text": "hi"}], name="ws/script.yaml")
        ws = str(served.workspace)
        try:
            async with (
                served.client("alice") as alice,
                served.client("bob") as bob,
                served.client("carol") as carol,
            ):
                assert (await self._create(alice, ws, f"replay:{script}")).status_code == 403
                for mode in ("auto", "autonomous-trusted", "bypass"):
                    assert (await self._create(bob, ws, f"replay:{script}", mode)).status_code == (
                        201 if mode == "auto" else 403
                    )
                assert (await self._create(bob, str(served.root), f"replay:{script}")).status_code == 403
                refused = await self._create(carol, ws, f"replay:{script}")
                assert refused.status_code == 403 and "grants you no workspace" in refused.text
                not_offered = await self._create(alice, ws, "anthropic:claude")
                assert not_offered.status_code == 403 and "offered: openai:gpt-4.1" in not_offered.text
        finally:
            await context.__aexit__(None, None, None)
