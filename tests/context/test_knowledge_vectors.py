"""The knowledge index's vectors, through the ``Embedder`` seam: one float32 vector per passage in real SQLite,
only changed passages re-embedded, a model switch re-embedding everything, reciprocal rank fusion of BM25 and
cosine rankings, read-only searching, and BM25 with a reason when the model cannot be loaded."""

from __future__ import annotations

import hashlib
import sqlite3
from array import array
from pathlib import Path

import pytest

from seepient.context.embedding import EmbedderUnavailable
from seepient.context.knowledge import (
    KnowledgeIndex,
    KnowledgeIndexError,
    search_index,
)
from tests.context.embedding_standins import DIMENSION, TrigramEmbedder, trigram_vector


@pytest.fixture
def docs(workspace: Path) -> Path:
    (workspace / "auth.md").write_text("# Authentication\n\nAuthentication checks signed tokens.\n")
    (workspace / "gateway.md").write_text("# Gateway\n\nAuthenticating users happens at the gateway.\n")
    (workspace / "expiry.md").write_text("# Expiry\n\nTokens expire hourly.\n")
    (workspace / "garden.md").write_text("# Garden\n\nWater the tomatoes every morning.\n")
    (workspace / "kitchen.md").write_text("# Kitchen\n\nThe oven heats slowly.\n")
    return workspace


def _build(db: Path, workspace: Path, embedder: TrigramEmbedder | None) -> object:
    with KnowledgeIndex(db, writable=True) as index:
        return index.update([workspace], workspace=workspace, embedder=embedder)


def _loader(embedder: TrigramEmbedder):  # type: ignore[no-untyped-def]
    def load(model_id: str) -> TrigramEmbedder:
        if model_id != embedder.model_id:
            raise EmbedderUnavailable(f"{model_id} is not installed")
        return embedder

    return load


def _vectors(db: Path) -> dict[str, list[float]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT p.text, v.vector FROM vectors v JOIN passages p ON p.rowid = v.passage_id"
        ).fetchall()
    out = {}
    for text, blob in rows:
        values = array("f")
        values.frombytes(blob)
        out[text] = list(values)
    return out


def test_every_passage_gets_a_float32_vector_and_the_model_is_recorded(docs: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    embedder = TrigramEmbedder()
    report = _build(db, docs, embedder)
    assert report.passages == 5 and report.embedded == 5 and report.reused == 0  # type: ignore[attr-defined]
    assert report.model == "test/trigram" and report.without_vector == 0  # type: ignore[attr-defined]
    vectors = _vectors(db)
    assert len(vectors) == 5
    text = "# Expiry\n\nTokens expire hourly."
    assert vectors[text] == pytest.approx(trigram_vector(text), abs=1e-6)
    with sqlite3.connect(db) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        (size,) = conn.execute("SELECT DISTINCT length(vector) FROM vectors").fetchone()
    assert meta["embedding_model"] == "test/trigram" and meta["embedding_dimension"] == str(DIMENSION)
    assert size == 4 * DIMENSION


def test_only_changed_passages_are_embedded_again(docs: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    embedder = TrigramEmbedder()
    (docs / "two.md").write_text("# One\n\nfirst part\n# Two\n\nsecond part\n")
    _build(db, docs, embedder)
    embedder.batches.clear()
    again = _build(db, docs, embedder)
    assert embedder.encoded == [] and again.embedded == 0  # type: ignore[attr-defined]
    (docs / "two.md").write_text("# One\n\nfirst part\n# Two\n\nsecond part, revised\n")
    (docs / "garden.md").unlink()
    report = _build(db, docs, embedder)
    assert embedder.encoded == ["# Two\n\nsecond part, revised"]
    assert (report.updated, report.removed, report.embedded, report.reused) == (1, 1, 1, 1)  # type: ignore[attr-defined]
    vectors = _vectors(db)
    assert "# One\n\nfirst part" in vectors and "# Two\n\nsecond part" not in vectors
    assert not [text for text in vectors if "tomatoes" in text]
    with sqlite3.connect(db) as conn:
        (orphans,) = conn.execute(
            "SELECT count(*) FROM vectors WHERE passage_id NOT IN (SELECT rowid FROM passages)"
        ).fetchone()
        (passages,) = conn.execute("SELECT count(*) FROM passages").fetchone()
    assert orphans == 0 and len(vectors) == passages


def test_switching_models_embeds_everything_again(docs: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    _build(db, docs, TrigramEmbedder("model-a", 128))
    other = TrigramEmbedder("model-b", 64)
    report = _build(db, docs, other)
    assert report.embedded == 5 and len(other.encoded) == 5  # type: ignore[attr-defined]
    assert {len(v) for v in _vectors(db).values()} == {64}
    outcome = search_index(db, "authentcation", embedders=_loader(other))
    assert outcome.method == "bm25+vector" and outcome.note == ""


def test_fusion_brings_in_vector_only_passages_and_ranks_agreement_first(docs: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    embedder = TrigramEmbedder()
    _build(db, docs, embedder)
    # "authentcation" is misspelt: BM25 only sees "tokens"; the trigrams still find the authentication passages.
    lexical = search_index(db, "authentcation tokens", embedders=None)
    assert [p.path for p in lexical.passages] == ["expiry.md", "auth.md"]  # the shorter passage wins BM25
    outcome = search_index(db, "authentcation tokens", embedders=_loader(embedder))
    assert outcome.method == "bm25+vector" and outcome.note == ""
    ranked = [(p.path, p.matched) for p in outcome.passages]
    # auth.md is second for BM25 but first by cosine: found by both, it leads the fused list.
    assert ranked == [
        ("auth.md", ("bm25", "vector")),
        ("expiry.md", ("bm25",)),
        ("gateway.md", ("vector",)),
    ]
    # garden.md and kitchen.md are below the similarity floor: not matches at all.
    assert [p.score for p in outcome.passages] == [
        pytest.approx(1 / 62 + 1 / 61, abs=1e-5),
        pytest.approx(1 / 61, abs=1e-5),
        pytest.approx(1 / 62, abs=1e-5),
    ]
    # A query BM25 cannot read at all still finds passages by meaning.
    (hit, *_) = search_index(db, "gatewy", embedders=_loader(embedder)).passages
    assert hit.path == "gateway.md" and hit.matched == ("vector",)


def test_search_leaves_the_index_untouched(docs: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    embedder = TrigramEmbedder()
    _build(db, docs, embedder)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    index = KnowledgeIndex(db)
    try:
        assert index.search("authentcation", embedders=_loader(embedder)).passages
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            index._db.execute("DELETE FROM vectors")
    finally:
        index.close()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_without_the_model_search_falls_back_to_bm25_and_says_why(docs: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    _build(db, docs, TrigramEmbedder())
    missing = search_index(db, "tokens", embedders=_loader(TrigramEmbedder("another")))
    assert missing.method == "bm25" and missing.passages
    assert all(p.matched == ("bm25",) for p in missing.passages)
    assert missing.note == "vectors not used, BM25 only: test/trigram is not installed"
    resized = search_index(db, "tokens", embedders=lambda _: TrigramEmbedder("test/trigram", 32))
    assert resized.method == "bm25" and "run `seepient knowledge index` again" in resized.note
    # The real loader, with sentence-transformers absent (or the model missing), explains itself as well.
    real = search_index(db, "tokens")
    assert real.method == "bm25" and real.note.startswith("vectors not used, BM25 only: ")
    assert "nothing is downloaded" in real.note


def test_an_index_without_vectors_searches_as_before(docs: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    _build(db, docs, None)
    outcome = search_index(db, "tokens", embedders=_loader(TrigramEmbedder()))
    assert outcome.method == "bm25" and outcome.note == "" and outcome.passages
    # An index written before the vectors table existed still opens read-only.
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE vectors")
    assert search_index(db, "tokens").passages


def test_a_run_without_the_model_keeps_vectors_and_counts_the_gaps(docs: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    embedder = TrigramEmbedder()
    _build(db, docs, embedder)
    (docs / "new.md").write_text("A new note about tokens.\n")
    report = _build(db, docs, None)
    assert report.model == "test/trigram" and report.without_vector == 1  # type: ignore[attr-defined]
    embedder.batches.clear()
    report = _build(db, docs, embedder)
    assert embedder.encoded == ["A new note about tokens."] and report.without_vector == 0  # type: ignore[attr-defined]


class _Broken(TrigramEmbedder):
    def encode(self, texts):  # type: ignore[no-untyped-def, override]
        return [[1.0, 0.0] for _ in texts]


def test_a_model_answering_the_wrong_size_changes_nothing(docs: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    _build(db, docs, TrigramEmbedder())
    (docs / "new.md").write_text("more\n")
    with pytest.raises(KnowledgeIndexError, match="vector of 2 numbers"):
        _build(db, docs, _Broken())
    with sqlite3.connect(db) as conn:
        paths = {row[0] for row in conn.execute("SELECT path FROM documents")}
    assert "new.md" not in paths and len(_vectors(db)) == 5


def test_turning_embeddings_off_drops_the_vectors(docs: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    embedder = TrigramEmbedder()
    _build(db, docs, embedder)
    with KnowledgeIndex(db, writable=True) as index:
        report = index.update([docs], workspace=docs, keep_vectors=False)
    assert report.model is None and report.without_vector == 0
    assert _vectors(db) == {}
    outcome = search_index(db, "authentcation tokens", embedders=_loader(embedder))
    assert outcome.method == "bm25" and outcome.note == ""
