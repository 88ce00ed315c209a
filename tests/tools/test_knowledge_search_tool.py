"""knowledge_search: a read-only draft, ranked passages with path:lines, score and matching signals through the
real executor, a clear answer when no index exists, passages from files the path guard refuses withheld, and
BM25 with a stated reason when the index's embedding model cannot be loaded."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from seepient.config import SeepientPaths
from seepient.config.settings import PermissionSettings
from seepient.context import embedding
from seepient.context.embedding import local_embedder
from seepient.context.knowledge import KnowledgeIndex
from seepient.policy.engine import PolicyEngine
from seepient.protocol import Decision
from seepient.tools.base import ToolContext, ToolInputError
from seepient.tools.builtin.knowledge import KnowledgeSearchTool
from tests.approved import approve
from tests.context.embedding_standins import write_sentence_transformers


@pytest.fixture
def env(workspace: Path, home: Path, seepient_home: Path, ctx: ToolContext) -> dict[str, Any]:
    index = SeepientPaths(home=seepient_home).knowledge_index(workspace)
    return {"workspace": workspace, "home": home, "seepient_home": seepient_home, "ctx": ctx, "index": index}


async def _search(ctx: ToolContext, **arguments: Any) -> Any:
    tool = KnowledgeSearchTool()
    draft = await tool.prepare(tool.input_model.model_validate(arguments), ctx)
    return draft, await tool.execute(approve(draft), ctx)


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


async def test_vector_ranking_reaches_the_tool_and_its_absence_is_said(
    env: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = env["workspace"]
    (ws / "gateway.md").write_text("# Gateway\n\nAuthenticating users happens at the gateway.\n")
    (ws / "garden.md").write_text("# Garden\n\nWater the tomatoes.\n")
    model = tmp_path / "model"
    model.mkdir()
    # The stand-in sentence_transformers package: the executor's own loader finds the index's model offline.
    monkeypatch.syspath_prepend(str(write_sentence_transformers(tmp_path / "site")))
    monkeypatch.delitem(sys.modules, "sentence_transformers", raising=False)
    monkeypatch.setattr(embedding, "_LOADED", {})
    with KnowledgeIndex(env["index"], writable=True) as index:
        index.update([ws], workspace=ws, embedder=local_embedder(str(model)))
    _, out = await _search(env["ctx"], query="autenticating")
    assert "(bm25+vector over 2 documents)" in out.text and "Note:" not in out.text
    assert "[1] gateway.md:1-3 (score " in out.text and "matched vector)" in out.text
    assert out.data["results"] == [
        {
            "path": "gateway.md",
            "lines": [1, 3],
            "score": out.data["results"][0]["score"],
            "matched": ["vector"],
        }
    ]
    # The model gone at search time: BM25 answers, and the result says why.
    monkeypatch.setattr(embedding, "_LOADED", {})
    shutil.rmtree(model)
    _, out = await _search(env["ctx"], query="gateway")
    assert out.data["method"] == "bm25" and out.data["results"][0]["matched"] == ["bm25"]
    assert "Note: vectors not used, BM25 only: embedding model" in out.text
    assert out.data["note"].startswith("vectors not used, BM25 only: ")
    sys.modules.pop("sentence_transformers", None)
