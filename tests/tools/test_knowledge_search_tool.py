"""knowledge_search: a read-only draft, ranked passages with path:lines and score through the real executor,
a clear answer when no index exists, and passages from files the path guard refuses withheld."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seepient.config import SeepientPaths
from seepient.config.settings import PermissionSettings
from seepient.context.knowledge import KnowledgeIndex
from seepient.policy.engine import PolicyEngine
from seepient.protocol import Decision
from seepient.tools.base import ToolContext, ToolInputError
from seepient.tools.builtin.knowledge import KnowledgeSearchTool


@pytest.fixture
def env(workspace: Path, home: Path, seepient_home: Path, ctx: ToolContext) -> dict[str, Any]:
    index = SeepientPaths(home=seepient_home).knowledge_index(workspace)
    return {"workspace": workspace, "home": home, "seepient_home": seepient_home, "ctx": ctx, "index": index}


async def _search(ctx: ToolContext, **arguments: Any) -> Any:
    tool = KnowledgeSearchTool()
    draft = await tool.prepare(tool.input_model.model_validate(arguments), ctx)
    return draft, await tool.execute(draft, ctx)


async def test_no_index_tells_how_to_build_one(env: dict[str, Any]) -> None:
    draft, out = await _search(env["ctx"], query="anything")
    assert draft.read_only and draft.kind == "read"
    assert not out.is_error and "seepient knowledge index" in out.text and out.data == {"indexed": False}


async def test_ranked_passages_with_sources(env: dict[str, Any]) -> None:
    ws = env["workspace"]
    (ws / "guide.md").write_text("# Setup\n\nInstall with pipx.\n\n# Rotation\n\nKeys rotate monthly.\n")
    (ws / "other.md").write_text("Nothing relevant.\n")
    with KnowledgeIndex(env["index"], writable=True) as index:
        index.update([ws], workspace=ws)
    _, out = await _search(env["ctx"], query="how often do keys rotate", limit=3)
    assert not out.is_error
    assert "[1] guide.md:5-7 (score " in out.text and "Keys rotate monthly." in out.text
    assert out.data["results"][0]["path"] == "guide.md" and out.data["results"][0]["lines"] == [5, 7]
    assert out.data["documents"] == 2 and out.data["method"] == "bm25"
    _, out = await _search(env["ctx"], query="zebra")
    assert "No passage matches" in out.text


async def test_passages_from_refused_files_are_withheld(env: dict[str, Any]) -> None:
    ws = env["workspace"]
    ssh = env["home"] / ".ssh"
    ssh.mkdir(exist_ok=True)
    (ssh / "notes").write_text("DATABASE_PASSWORD=hunter2 rotate\n")
    (ws / "ok.md").write_text("rotate the logs\n")
    with KnowledgeIndex(env["index"], writable=True) as index:
        # Built without a skip check, as an index built before a path became sensitive might have been.
        index.update([ws, ssh], workspace=ws)
    _, out = await _search(env["ctx"], query="rotate password")
    assert "hunter2" not in out.text and "ok.md" in out.text
    assert "1 match(es) in files you may not read were left out" in out.text


async def test_policy_allows_reads_and_obeys_a_deny_rule(env: dict[str, Any]) -> None:
    tool = KnowledgeSearchTool()
    draft = await tool.prepare(tool.input_model.model_validate({"query": "x"}), env["ctx"])

    def verdict(**rules: list[str]) -> Any:
        return PolicyEngine(
            env["workspace"],
            seepient_home=env["seepient_home"],
            home=env["home"],
            mode="always-ask",
            permissions=PermissionSettings(**rules),
        ).evaluate(draft)

    assert verdict().decision is Decision.ALLOW
    assert verdict(deny=["knowledge_search"]).decision is Decision.DENY
    assert verdict(ask=["knowledge_search"]).decision is Decision.ASK
    with pytest.raises(ToolInputError, match="words"):
        await tool.prepare(tool.input_model.model_validate({"query": "?!"}), env["ctx"])
