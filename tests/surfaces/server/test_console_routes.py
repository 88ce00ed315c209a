"""The console's routes on a real server: its files under a strict Content-Security-Policy (no inline script,
nothing from another origin, only listed files), the caller's own grants, a session's audit records with the
chain's verdict (tampering shows), markdown rendered server-side, and "always for this project" answers."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx2

from seepient.surfaces.server import console_routes
from tests.surfaces.server.conftest import Served, start
from tests.surfaces.server.test_rest import _create, _sse, _wait_for

CONSOLE = Path(console_routes.__file__).parent / "console"
DIST = Path(__file__).resolve().parents[3] / "clients" / "typescript" / "dist"


def _policy(header: str) -> dict[str, list[str]]:
    return {d.split()[0]: d.split()[1:] for d in (part.strip() for part in header.split(";")) if d}


async def test_the_console_page_and_its_files_carry_a_strict_policy(served: Served) -> None:
    async with served.client(None) as anonymous:
        page = await anonymous.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        policy = _policy(page.headers["content-security-policy"])
        assert policy["default-src"] == ["'none'"]
        assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"]
        assert policy["connect-src"] == ["'self'"] and policy["frame-ancestors"] == ["'none'"]
        assert policy["require-trusted-types-for"] == ["'script'"]
        assert page.headers["x-content-type-options"] == "nosniff"
        # No inline script or handler in the page itself, and nothing it loads comes from elsewhere.
        assert not re.search(r"<script(?![^>]*\bsrc=)", page.text)
        assert not re.search(r"\son[a-z]+=", page.text)
        assert not re.search(r"(src|href)=\"(?!/console/|#)", page.text)
        for name in ("app.js", "console.css", "sdk/index.js", "sdk/client.js", "icon.svg"):
            file = await anonymous.get(f"/console/{name}")
            assert file.status_code == 200, name
            assert "script-src 'self'" in file.headers["content-security-policy"]
        assert (await anonymous.get("/console/app.js")).headers["content-type"].startswith("text/javascript")
        # The SDK the page imports is the compiled client, byte for byte.
        for compiled in DIST.glob("*.js"):
            assert (await anonymous.get(f"/console/sdk/{compiled.name}")).content == compiled.read_bytes()
        for name in (
            "../console_routes.py",
            "..%2fconsole_routes.py",
            "sdk/client.d.ts",
            "nope.js",
            "/etc/passwd",
        ):
            assert (await anonymous.get(f"/console/{name}")).status_code == 404, name


def test_the_console_scripts_build_html_from_text_only() -> None:
    """Every module builds its DOM from text nodes; the one HTML sink is the server's sanitised markdown."""
    for module in CONSOLE.glob("*.js"):
        source = module.read_text()
        assert not re.search(r"\beval\(|new Function|insertAdjacentHTML|outerHTML|document\.write", source), (
            module
        )
        sinks = re.findall(r"\.innerHTML\s*=", source)
        assert len(sinks) == (1 if module.name == "dom.js" else 0), module
        for imported in re.findall(r"from \"([^\"]+)\"", source):
            assert imported.startswith("./"), f"{module.name} imports {imported} from outside the console"


async def test_me_answers_with_the_callers_own_grants_only(tmp_path: Path) -> None:
    config = {
        "server": {
            "principals": {
                "alice": {"roots": ["root/ws"], "models": ["openai:gpt-4o"], "maxMode": "ask-untrusted"},
                "bob": {"roots": ["root"], "allowReplay": True, "maxMode": "auto"},
            }
        }
    }
    served, context = await start(tmp_path, config=config, principals=("alice", "bob", "carol"))
    try:
        async with (
            served.client("alice") as alice,
            served.client("bob") as bob,
            served.client("carol") as carol,
        ):
            mine = (await alice.get("/v1/me")).json()
            assert mine == {
                "principal": "alice",
                "roots": [str(served.workspace.resolve())],
                "models": ["openai:gpt-4o"],
                "max_mode": "ask-untrusted",
                "modes": ["always-ask", "ask-untrusted"],
                "allow_replay": False,
            }
            theirs = (await bob.get("/v1/me")).json()
            assert theirs["principal"] == "bob" and theirs["modes"][-1] == "auto" and theirs["allow_replay"]
            nothing = (await carol.get("/v1/me")).json()
            assert nothing["roots"] == [] and nothing["modes"] == [] and nothing["max_mode"] is None
        async with served.client(None) as anonymous:
            assert (await anonymous.get("/v1/me")).status_code == 401
    finally:
        await context.__aexit__(None, None, None)


async def _approve_next(client: httpx2.AsyncClient, session_id: str, decision: str, seen: int = 0) -> dict:
    for _ in range(500):
        asks = [e for e in await _sse(client, session_id) if e["type"] == "permission_request"]
        if len(asks) > seen:
            request = asks[-1]["request"]
            answer = await client.post(
                f"/v1/sessions/{session_id}/approvals/{request['request_id']}", json={"decision": decision}
            )
            assert answer.status_code == 200, answer.text
            return request
        await asyncio.sleep(0.02)
    raise AssertionError("no permission_request")


def _write(path: str) -> dict:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": "x\n"}}]}


async def test_the_audit_view_holds_the_sessions_records_and_shows_tampering(served: Served) -> None:
    async with served.client("alice") as alice, served.client("bob") as bob:
        mine = await _create(alice, served, served.script([_write("a.txt"), {"text": "done"}], "a.yaml"))
        other = await _create(alice, served, served.script([_write("b.txt"), {"text": "done"}], "b.yaml"))
        for session_id in (mine, other):
            await alice.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "write"})
            await _approve_next(alice, session_id, "approve_once")
            await _wait_for(alice, session_id, "turn_completed")
        view = (await alice.get(f"/v1/sessions/{mine}/audit")).json()
        assert {r["session_id"] for r in view["records"]} == {mine}
        assert [r["type"] for r in view["records"]] == ["intent", "outcome"]
        assert view["records"][0]["action"]["tool"] == "write_file"
        assert view["records"][1]["outcome"]["status"] == "ok"
        verdict = view["verification"]
        assert verdict["ok"] and verdict["exists"] and verdict["records"] >= 4 and verdict["problem"] is None
        assert (await bob.get(f"/v1/sessions/{mine}/audit")).status_code == 404
        assert (await alice.get("/v1/sessions/sess_nope/audit")).status_code == 404

        log = served.home / "audit.log"
        lines = log.read_text().splitlines(keepends=True)
        first = json.loads(lines[0])
        first["outcome" if "outcome" in first else "action"]["summary" if "action" in first else "detail"] = (
            "edited"
        )
        lines[0] = json.dumps(first) + "\n"
        log.write_text("".join(lines))
        tampered = (await alice.get(f"/v1/sessions/{mine}/audit")).json()["verification"]
        assert not tampered["ok"] and tampered["first_bad_seq"] == 1 and tampered["problem"]


async def test_markdown_is_rendered_and_sanitised_for_a_signed_in_caller(served: Served) -> None:
    async with served.client("alice") as alice, served.client(None) as anonymous:
        answer = await alice.post("/v1/render/markdown", json={"texts": ["**hi**", "<script>x</script>"]})
        assert answer.json() == {
            "html": ["<p><strong>hi</strong></p>\n", "<p>&lt;script&gt;x&lt;/script&gt;</p>\n"]
        }
        assert (await anonymous.post("/v1/render/markdown", json={"texts": ["x"]})).status_code == 401
        too_many = await alice.post("/v1/render/markdown", json={"texts": ["x"] * 201})
        assert too_many.status_code == 422


async def test_always_for_this_project_is_an_answer_the_server_takes(served: Served) -> None:
    async with served.client("alice") as alice:
        turns = [_write("p1.txt"), {"text": "one"}, _write("p1.txt"), {"text": "two"}]
        session_id = await _create(alice, served, served.script(turns, "p.yaml"))
        await alice.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "first"})
        request = await _approve_next(alice, session_id, "approve_project")
        assert request["project_rule"]
        await _wait_for(alice, session_id, "turn_completed")
        resolved = [e for e in await _sse(alice, session_id) if e["type"] == "permission_resolved"]
        assert resolved[0]["response"]["decision"] == "approve_project"
        assert resolved[0]["response"]["scope"] == request["project_rule"]
        # The same action again runs on the saved rule: nobody is asked.
        await alice.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "again"})
        for _ in range(500):
            events = await _sse(alice, session_id)
            if sum(e["type"] == "turn_completed" for e in events) == 2:
                break
            await asyncio.sleep(0.02)
        assert sum(e["type"] == "permission_request" for e in events) == 1
        assert [e["reason"] for e in events if e["type"] == "turn_completed"] == ["final", "final"]
