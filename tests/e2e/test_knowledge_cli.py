"""End to end: ``seepient knowledge index`` and ``search`` through the real console script (BM25 only here,
and with vectors from a stand-in sentence_transformers package on the import path), then a replayed
``seepient run`` whose knowledge_search and memory calls go through the whole pipeline."""

from __future__ import annotations

import importlib.util
import json

import pytest

from seepient.config import SeepientPaths
from tests.context.embedding_standins import write_sentence_transformers
from tests.e2e.conftest import SECRET_MARKER, json_events

pytestmark = pytest.mark.e2e


@pytest.fixture
def docs(world):  # type: ignore[no-untyped-def]
    ws = world.workspace
    (ws / "docs").mkdir()
    (ws / "docs" / "deploy.md").write_text("# Deploy\n\nRun make release, then tag the commit.\n")
    (ws / "src.py").write_text("def release():\n    return 'tagged'\n")
    (ws / ".gitignore").write_text("dist/\n")
    (ws / "dist").mkdir()
    (ws / "dist" / "bundle.md").write_text("release bundle\n")
    return ws


def test_index_search_and_reindex(seepient, world, docs) -> None:  # type: ignore[no-untyped-def]
    first = seepient("knowledge", "index", "--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["added"] == 3 and report["documents"] == 3 and report["ranking"] == "bm25"
    assert report["embeddings"] is False and "nothing is downloaded" in report["note"]
    if importlib.util.find_spec("sentence_transformers") is None:
        assert report["note"].startswith("BM25 only: sentence-transformers is not installed")
    assert report["index"] == str(SeepientPaths(home=world.seepient_home).knowledge_index(docs.resolve()))

    found = seepient("knowledge", "search", "how to release", "--json")
    assert found.returncode == 0, found.stderr
    passages = json.loads(found.stdout)["passages"]
    assert {p["path"] for p in passages} >= {"docs/deploy.md", "src.py"}
    assert all(p["path"] != "dist/bundle.md" for p in passages)

    (docs / "src.py").write_text("def release():\n    return 'signed'\n")
    again = seepient("knowledge", "index")
    assert again.returncode == 0
    assert "0 added, 1 updated, 2 unchanged, 0 removed" in again.stdout
    (ranking,) = [line for line in again.stdout.splitlines() if "ranking:" in line]
    assert ranking.startswith("  ranking: BM25 only: ") and "nothing is downloaded" in ranking

    none = seepient("knowledge", "search", "zebra")
    assert none.returncode == 1


def test_vectors_from_a_local_model_are_stored_and_fused(seepient, world, docs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = tmp_path / "model"
    model.mkdir()
    config = tmp_path / "knowledge.json"
    config.write_text(json.dumps({"knowledge": {"embeddingModel": str(model)}}))
    env = {**world.env, "PYTHONPATH": str(write_sentence_transformers(tmp_path / "site"))}
    first = seepient("knowledge", "index", "--config", str(config), "--json", env=env)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["ranking"] == "bm25+vector" and report["embeddings"] is True
    assert report["model"] == str(model.resolve()) and report["embedded"] == report["passages"] == 3

    # "relase" is misspelt: BM25 cannot read it, the vectors still find the release passages.
    found = seepient("knowledge", "search", "relase", "--json", env=env)
    assert found.returncode == 0, found.stderr
    outcome = json.loads(found.stdout)
    assert outcome["method"] == "bm25+vector" and outcome["note"] == ""
    assert {p["path"] for p in outcome["passages"]} >= {"docs/deploy.md", "src.py"}
    assert all(p["matched"] == ["vector"] for p in outcome["passages"])

    (docs / "src.py").write_text("def release():\n    return 'signed'\n")
    again = seepient("knowledge", "index", "--config", str(config), env=env)
    assert again.returncode == 0, again.stderr
    assert (
        f"ranking: BM25 + vectors ({model.resolve()}, 256 dimensions): 1 passage(s) embedded" in again.stdout
    )

    # Without the library at search time, the answer is BM25's and says why in one line.
    plain = seepient("knowledge", "search", "release", env=world.env)
    assert plain.returncode == 0
    assert plain.stderr.startswith("note: vectors not used, BM25 only: ") and plain.stderr.count("\n") == 1
    assert "(score " in plain.stdout and ", bm25)" in plain.stdout

    config.write_text(json.dumps({"knowledge": {"embeddingModel": "none"}}))
    off = seepient("knowledge", "index", "--config", str(config), "--json", env=env)
    assert off.returncode == 0, off.stderr
    assert json.loads(off.stdout)["model"] is None and "turned off" in json.loads(off.stdout)["note"]
    assert (
        json.loads(seepient("knowledge", "search", "release", "--json", env=env).stdout)["method"] == "bm25"
    )


def test_secrets_outside_and_inside_are_not_indexed(seepient, world, docs) -> None:  # type: ignore[no-untyped-def]
    result = seepient("knowledge", "index", str(docs), str(world.home / ".ssh"))
    assert result.returncode == 0, result.stderr
    assert "refused by policy" in result.stdout
    found = seepient("knowledge", "search", "BEGIN KEY", "--json")
    assert SECRET_MARKER not in found.stdout


def test_bad_paths_are_a_usage_error(seepient, world) -> None:  # type: ignore[no-untyped-def]
    result = seepient("knowledge", "index", "no-such-dir")
    assert result.returncode == 2 and "no such file or folder" in result.stderr
    empty = seepient("knowledge", "search", "anything")
    assert empty.returncode == 1 and "knowledge index" in empty.stderr


def test_run_uses_the_index_and_memory(seepient, world, docs) -> None:  # type: ignore[no-untyped-def]
    assert seepient("knowledge", "index").returncode == 0
    script = world.script(
        [
            {"tool_calls": [{"name": "knowledge_search", "arguments": {"query": "release steps"}}]},
            {
                "tool_calls": [
                    {
                        "name": "memory",
                        "arguments": {
                            "command": "create",
                            "path": "/memories/project/release.md",
                            "file_text": "Release: make release, then tag.\n",
                        },
                    }
                ]
            },
            {"text": "Done."},
        ]
    )
    result = seepient("run", "how do we release?", "--model", f"replay:{script}", "-y", "--json")
    assert result.returncode == 0, result.stderr
    outputs = {e["tool"]: e for e in json_events(result.stdout) if e.get("type") == "tool_result"}
    assert outputs["knowledge_search"]["status"] == "ok"
    assert "docs/deploy.md:" in outputs["knowledge_search"]["output"]
    assert outputs["memory"]["status"] == "ok"
    folder = SeepientPaths(home=world.seepient_home).memory_dir("project", docs.resolve())
    assert (folder / "release.md").read_text() == "Release: make release, then tag.\n"
    shown = seepient("context", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    assert "Release: make release, then tag." in shown.stdout
    assert {r["action"]["tool"] for r in world.audit_records()} == {"knowledge_search", "memory"}
