"""The knowledge index: passages with line ranges in real SQLite FTS5, BM25 ranking, ignore files, incremental
re-indexing by size/mtime then hash, pruning, hostile queries, and read-only searching."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from seepient.context.knowledge import (
    PASSAGE_LINES,
    KnowledgeIndex,
    KnowledgeIndexError,
    chunk_lines,
    fts5_available,
    match_expression,
    search_index,
)


def test_this_python_has_fts5() -> None:
    assert fts5_available()


@pytest.fixture
def corpus(workspace: Path) -> Path:
    (workspace / "docs").mkdir()
    (workspace / "docs" / "tokens.md").write_text(
        "# Tokens\n\nAPI tokens are rotated every 30 days by the rotation job.\n\n"
        "# Deploy\n\nDeploys go through the release pipeline.\n"
    )
    (workspace / "src").mkdir()
    body = "\n".join(f"line {n}" for n in range(1, 101))
    (workspace / "src" / "big.py").write_text(body + "\ndef rotate_tokens():\n    return 'rotation'\n")
    (workspace / "notes.txt").write_text("Nothing about that subject here.\n")
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.md").write_text("tokens rotated in the build output\n")
    (workspace / "logo.png").write_bytes(b"\x89PNG\x00\x00tokens")
    return workspace


def _index(path: Path, workspace: Path, **kwargs: object) -> object:
    with KnowledgeIndex(path, writable=True) as index:
        return index.update([workspace], workspace=workspace, **kwargs)  # type: ignore[arg-type]


def test_index_and_search_rank_passages_with_sources(corpus: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    report = _index(db, corpus)
    assert report.added == 4  # tokens.md, big.py, notes.txt, .gitignore; build/ ignored, png binary
    assert report.skipped == {"binary or not UTF-8": 1}
    outcome = search_index(db, "how are API tokens rotated?")
    assert outcome.indexed and outcome.documents == 4
    paths = [p.path for p in outcome.passages]
    assert paths[0] == "docs/tokens.md"
    assert "build/out.md" not in paths and "logo.png" not in paths
    best = outcome.passages[0]
    assert (best.start_line, best.end_line) == (1, 4)
    assert "rotated every 30 days" in best.text
    assert all(a.score >= b.score for a, b in zip(outcome.passages, outcome.passages[1:], strict=False))
    code = [p for p in outcome.passages if p.path == "src/big.py"]
    assert code and code[0].end_line == 102 and "def rotate_tokens" in code[0].text


def test_reindex_is_incremental(corpus: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    _index(db, corpus)
    again = _index(db, corpus)
    assert (again.added, again.updated, again.unchanged, again.removed) == (0, 0, 4, 0)
    notes = corpus / "notes.txt"
    # Same bytes, new mtime: the hash says unchanged, and the passages are not rebuilt.
    stat = notes.stat()
    os.utime(notes, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert _index(db, corpus).unchanged == 4
    notes.write_text("Now it mentions quokkas.\n")
    (corpus / "docs" / "tokens.md").unlink()
    report = _index(db, corpus)
    assert (report.updated, report.removed) == (1, 1)
    assert search_index(db, "quokkas").passages[0].path == "notes.txt"
    assert not [p for p in search_index(db, "tokens rotated").passages if p.path == "docs/tokens.md"]


def test_skip_check_keeps_files_out(corpus: Path, tmp_path: Path) -> None:
    (corpus / ".env").write_text("API_TOKEN=sk-secret tokens\n")
    db = tmp_path / "k.sqlite"
    report = _index(db, corpus, skip=lambda p: "secret" if p.name == ".env" else None)
    assert report.skipped["secret"] == 1
    assert all(p.path != ".env" for p in search_index(db, "API_TOKEN tokens").passages)


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "tokens AND (OR", "NEAR(a b", "col:tokens", "*", "tokens^2 -deploy", "'; DROP TABLE"],
)
def test_fts_syntax_in_queries_is_taken_as_words(corpus: Path, tmp_path: Path, query: str) -> None:
    db = tmp_path / "k.sqlite"
    _index(db, corpus)
    outcome = search_index(db, query)
    assert outcome.indexed
    assert search_index(db, "tokens").passages  # the index survived


def test_search_opens_read_only_and_reports_a_missing_or_foreign_index(corpus: Path, tmp_path: Path) -> None:
    missing = search_index(tmp_path / "none.sqlite", "x")
    assert not missing.indexed
    db = tmp_path / "k.sqlite"
    _index(db, corpus)
    index = KnowledgeIndex(db)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        index._db.execute("DELETE FROM documents")
    index.close()
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db2:
        db2.execute("CREATE TABLE x (y)")
    with pytest.raises(KnowledgeIndexError, match="not a knowledge index"):
        search_index(foreign, "x")


def test_chunks_cover_every_line_with_overlap() -> None:
    text = "\n".join(f"l{n}" for n in range(1, 101))
    passages = chunk_lines(text)
    assert passages[0].start_line == 1 and passages[0].end_line == PASSAGE_LINES
    assert passages[-1].end_line == 100
    for a, b in zip(passages, passages[1:], strict=False):
        assert b.start_line <= a.end_line + 1
    for passage in passages:
        lines = passage.text.splitlines()
        assert lines[0] == f"l{passage.start_line}" and lines[-1] == f"l{passage.end_line}"
    headed = chunk_lines("intro\n# One\na\n# Two\nb\n")
    assert [(p.start_line, p.end_line) for p in headed] == [(1, 1), (2, 3), (4, 5)]


def test_match_expression_quotes_every_word() -> None:
    assert match_expression('say "hi" OR bye') == '"say" OR "hi" OR "or" OR "bye"'
    assert match_expression("!!!") is None


def test_reindexing_one_root_keeps_documents_of_another(corpus: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "shared-docs"
    elsewhere.mkdir()
    (elsewhere / "handbook.md").write_text("The on-call handbook covers paging.\n")
    db = tmp_path / "k.sqlite"
    with KnowledgeIndex(db, writable=True) as index:
        index.update([corpus, elsewhere], workspace=corpus)
    (corpus / "notes.txt").unlink()
    with KnowledgeIndex(db, writable=True) as index:
        report = index.update([corpus], workspace=corpus)
    assert report.removed == 1
    (hit,) = search_index(db, "paging handbook").passages
    assert hit.path == str(elsewhere.resolve() / "handbook.md")
