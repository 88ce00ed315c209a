"""The server opens workspaces with their project settings untrusted unless the operator's config marks a root
trusted: a repository's allow rules and mode count only there, and the user's own trust store never counts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from seepient.config import SeepientPaths
from seepient.config.settings import inspect_project
from seepient.config.trust import TrustStore
from seepient.surfaces.server.config import ServerConfig, load_server_config
from tests.surfaces.server.conftest import Served, start
from tests.surfaces.server.test_rest import _create, _sse

TEAM = {"permissions": {"allow": ["Shell(touch:*)"], "mode": "autonomous-trusted"}}


def _plant(workspace: Path) -> None:
    (workspace / ".seepient").mkdir(parents=True, exist_ok=True)
    (workspace / ".seepient" / "settings.json").write_text(json.dumps(TEAM))


async def _touch(served: Served) -> tuple[list[dict], bool]:
    """Run ``touch made`` in always-ask mode; reject it if asked. Returns the events and whether it ran."""
    script = served.script(
        [{"tool_calls": [{"name": "shell", "arguments": {"command": "touch made"}}]}, {"text": "ok"}]
    )
    async with served.client() as client:
        session_id = await _create(client, served, script, mode="always-ask")
        turn = asyncio.create_task(
            client.post(f"/v1/sessions/{session_id}/messages", params={"wait": "true"}, json={"prompt": "go"})
        )
        while not turn.done():
            asked = [e for e in await _sse(client, session_id) if e["type"] == "permission_request"]
            if asked:
                request_id = asked[0]["request"]["request_id"]
                await client.post(
                    f"/v1/sessions/{session_id}/approvals/{request_id}", json={"decision": "reject"}
                )
                break
            await asyncio.sleep(0.05)
        await turn
        events = await _sse(client, session_id)
    return events, (served.workspace / "made").exists()


async def test_a_workspace_outside_the_trusted_roots_keeps_its_project_settings_untrusted(tmp_path):
    served, context = await start(tmp_path)
    try:
        _plant(served.workspace)
        # The server's user trusting the folder with `seepient trust` does not make it trusted on the server.
        paths = SeepientPaths(home=served.home)
        TrustStore(paths.trust_store).trust(
            served.workspace, inspect_project(served.workspace, paths=paths).file.sha256
        )
        events, ran = await _touch(served)
    finally:
        await context.__aexit__(None, None, None)
    assert not ran
    assert any(e["type"] == "permission_request" for e in events)


async def test_a_trusted_root_lets_the_teams_rules_apply(tmp_path):
    config = {
        "server": {
            "defaultPrincipal": {"roots": ["root"], "maxMode": "autonomous-trusted", "allowReplay": True},
            "trustedRoots": ["root"],
        }
    }
    served, context = await start(tmp_path, config=config)
    try:
        _plant(served.workspace)
        events, ran = await _touch(served)
    finally:
        await context.__aexit__(None, None, None)
    assert ran
    assert not any(e["type"] == "permission_request" for e in events)


def test_trusted_roots_are_resolved_and_cover_only_what_lies_below(tmp_path):
    (tmp_path / "team" / "repo").mkdir(parents=True)
    (tmp_path / "teammate").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "team")
    config_file = tmp_path / "server.json"
    config_file.write_text(json.dumps({"server": {"trustedRoots": ["team"]}}))
    config = load_server_config(config_file)
    assert config.trusts(tmp_path / "team") and config.trusts(tmp_path / "team" / "repo")
    assert config.trusts(tmp_path / "link" / "repo")  # the same folder by another name
    assert not config.trusts(tmp_path / "teammate")  # a sibling whose name starts the same
    assert not config.trusts(tmp_path / "team" / ".." / "teammate")
    assert not ServerConfig().trusts(tmp_path / "team")  # no config: nothing is trusted
