"""The local knowledge index: documents cut into passages (path and line range) in SQLite FTS5, ranked by BM25,
and, when a local embedding model is available, one vector per passage, the two rankings fused.

``seepient knowledge index`` builds and refreshes it (files whose size and mtime, or else content hash, are
unchanged are skipped; a passage whose text is unchanged keeps its vector); the ``knowledge_search`` tool
only ever opens it read-only.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import math
import operator
import os
import re
import sqlite3
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from seepient.context.embedding import Embedder, EmbedderUnavailable, load_embedder
from seepient.execution.search import TreeWalker
from seepient.protocol.errors import StorageError
from seepient.protocol.retrieval import KnowledgeOutcome, KnowledgePassage

SCHEMA_VERSION = "1"
PASSAGE_LINES = 40
PASSAGE_OVERLAP = 8
PASSAGE_MAX_CHARS = 4_000
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_QUERY_TERMS = 32
EMBED_BATCH = 64
RRF_K = 60
"""Reciprocal rank fusion's constant: a passage scores 1/(RRF_K + rank) in each ranking that found it."""
CANDIDATES = 50
"""How deep each ranking is read before fusing."""
VECTOR_MIN_SIMILARITY = 0.25
"""Cosine below which a passage is not a vector match: nearest neighbours always exist, relevant or not."""
_TERM = re.compile(r"\w+", re.UNICODE)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    indexed_at REAL NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(
    text, path UNINDEXED, start_line UNINDEXED, end_line UNINDEXED, doc_id UNINDEXED,
    tokenize = 'porter unicode61'
);
CREATE TABLE IF NOT EXISTS vectors (passage_id INTEGER PRIMARY KEY, vector BLOB NOT NULL);
"""
_MODEL_KEY = "embedding_model"
_DIMENSION_KEY = "embedding_dimension"
EmbedderLoader = Callable[[str], Embedder]
"""Loads the embedder an index's vectors were made with, from its model id; raises ``EmbedderUnavailable``."""

SkipCheck = Callable[[Path], str | None]
"""Why a file must stay out of the index (a secret, Seepient's own state), or None when it may go in."""


class KnowledgeIndexError(StorageError):
    """An index that cannot be built or read; the message says why and what to do."""


@dataclass
class IndexReport:
    """What one ``index`` run did. ``skipped`` maps a reason to how many files it kept out."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    passages: int = 0
    documents: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    embedded: int = 0
    """Passages given a new vector by the embedder in this run."""
    reused: int = 0
    """Passages of changed files whose text was unchanged, so their vector was kept."""
    without_vector: int = 0
    """Passages of an index with vectors that have none (indexed in a run without the model)."""
    model: str | None = None
    """The embedding model the index's vectors come from, if any."""

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


@dataclass(frozen=True)
class Passage:
    start_line: int
    end_line: int
    text: str


def fts5_available() -> bool:
    """Whether this Python's SQLite was built with FTS5 (extensions cannot be loaded into it here)."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as db:
            db.execute("CREATE VIRTUAL TABLE probe USING fts5(text)")
        return True
    except sqlite3.OperationalError:
        return False


def chunk_lines(text: str) -> list[Passage]:
    """Passages of at most ``PASSAGE_LINES`` lines (and ``PASSAGE_MAX_CHARS``), overlapping a little so a
    match across a boundary is still found whole; a markdown heading starts a new passage."""
    lines = text.splitlines()
    passages: list[Passage] = []
    start = 0
    while start < len(lines):
        end = start
        size = 0
        while (
            end < len(lines) and end - start < PASSAGE_LINES and size + len(lines[end]) <= PASSAGE_MAX_CHARS
        ):
            if end > start and lines[end].startswith("#") and lines[end][:7].lstrip("#").startswith(" "):
                break
            size += len(lines[end]) + 1
            end += 1
        if end == start:  # one line longer than the cap: cut it
            end = start + 1
        body = "\n".join(lines[start:end])[:PASSAGE_MAX_CHARS]
        if body.strip():
            passages.append(Passage(start + 1, end, body))
        if end >= len(lines):
            break
        heading_cut = lines[end].startswith("#")
        start = end if heading_cut else max(start + 1, end - PASSAGE_OVERLAP)
    return passages


def _decode(data: bytes) -> str | None:
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def match_expression(query: str) -> str | None:
    """An FTS5 query from free text: every word quoted (so no word is read as FTS syntax), any may match;
    BM25 then ranks passages holding more of them, and rarer ones, higher."""
    terms = list(dict.fromkeys(term.lower() for term in _TERM.findall(query)))[:MAX_QUERY_TERMS]
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


class KnowledgeIndex:
    """One index file. Open it with ``writable=True`` only from the command a person runs."""

    def __init__(self, path: Path, *, writable: bool = False) -> None:
        self.path = path
        self._reusable: dict[str, bytes] = {}
        if writable:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            # The index quotes the files it read: created 0600 before SQLite opens it (its -wal and -shm files
            # take the database's mode), whatever the umask.
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600))
            os.chmod(path, 0o600)
            self._db = sqlite3.connect(path)
            try:
                self._db.executescript(_SCHEMA)
            except sqlite3.OperationalError as exc:
                self._db.close()
                raise KnowledgeIndexError(
                    f"{path}: cannot create the index ({exc}); is FTS5 available?"
                ) from None
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            self._db.commit()
        else:
            if not path.is_file():
                raise FileNotFoundError(path)
            # mode=ro: a search can never change the index, even through a bug.
            self._db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            try:
                row = self._db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            except sqlite3.DatabaseError as exc:
                self._db.close()
                raise KnowledgeIndexError(
                    f"{path} is not a knowledge index ({exc}); rebuild it with `seepient knowledge index`"
                ) from None
            if row is None or row[0] != SCHEMA_VERSION:
                self._db.close()
                raise KnowledgeIndexError(
                    f"{path} was built by another version of Seepient; rebuild it with `seepient knowledge index`"
                )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> KnowledgeIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- building ---------------------------------------------------------------------------------------

    def update(
        self,
        roots: Iterable[Path],
        *,
        workspace: Path,
        skip: SkipCheck | None = None,
        prune: bool = True,
        embedder: Embedder | None = None,
        keep_vectors: bool = True,
    ) -> IndexReport:
        """Index every text file under ``roots`` (files or folders; ignore files honoured, ``.git`` and
        symlinks skipped). With ``prune``, documents under the roots that are gone (or now skipped) leave the
        index. With an ``embedder``, every passage without a vector gets one (all of them when the model
        changed); without one, vectors already stored stay (for a model missing only for now) unless
        ``keep_vectors`` is false. One transaction: an interrupted run leaves the index as it was."""
        report = IndexReport()
        self._reusable: dict[str, bytes] = {}
        seen: set[str] = set()
        covered: list[str] = []
        workspace = workspace.resolve()
        with self._db:
            for root in roots:
                root = root.resolve()
                covered.append(_key(root, workspace))
                for absolute, info in _files(root):
                    key = _key(absolute, workspace)
                    if key in seen:
                        continue
                    seen.add(key)
                    reason = skip(absolute) if skip is not None else None
                    if reason is not None:
                        report.skip(reason)
                        continue
                    if info.st_size > MAX_FILE_BYTES:
                        report.skip(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
                        continue
                    self._index_file(absolute, key, info, report)
            if prune:
                report.removed = self._prune(covered, seen)
            report.documents = self._db.execute("SELECT count(*) FROM documents").fetchone()[0]
            if embedder is not None:
                self._embed(embedder, report)
            elif not keep_vectors:
                self._db.execute("DELETE FROM vectors")
                self._db.execute("DELETE FROM meta WHERE key IN (?, ?)", (_MODEL_KEY, _DIMENSION_KEY))
            report.model = _meta(self._db, _MODEL_KEY)
            if report.model is not None:
                report.without_vector = self._db.execute(
                    "SELECT count(*) FROM passages WHERE rowid NOT IN (SELECT passage_id FROM vectors)"
                ).fetchone()[0]
        self._reusable = {}
        return report

    def _embed(self, embedder: Embedder, report: IndexReport) -> None:
        dimension = embedder.dimension
        stored = (_meta(self._db, _MODEL_KEY), _meta(self._db, _DIMENSION_KEY))
        if stored != (embedder.model_id, str(dimension)):
            # Vectors of two models live in different spaces: comparing them would rank noise.
            self._db.execute("DELETE FROM vectors")
            self._reusable.clear()
            self._db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [(_MODEL_KEY, embedder.model_id), (_DIMENSION_KEY, str(dimension))],
            )
        missing = self._db.execute(
            "SELECT rowid, text FROM passages WHERE rowid NOT IN (SELECT passage_id FROM vectors) ORDER BY rowid"
        ).fetchall()
        todo: list[tuple[int, str]] = []
        for rowid, text in missing:
            kept = self._reusable.get(_digest(text))
            if kept is not None:
                self._db.execute("INSERT INTO vectors VALUES (?, ?)", (rowid, kept))
                report.reused += 1
            else:
                todo.append((rowid, text))
        for start in range(0, len(todo), EMBED_BATCH):
            batch = todo[start : start + EMBED_BATCH]
            vectors = embedder.encode([text for _, text in batch])
            if len(vectors) != len(batch):
                raise KnowledgeIndexError(
                    f"embedding model {embedder.model_id} returned {len(vectors)} vectors for {len(batch)} passages"
                )
            rows = []
            for (rowid, _), vector in zip(batch, vectors, strict=True):
                if len(vector) != dimension:
                    raise KnowledgeIndexError(
                        f"embedding model {embedder.model_id} returned a vector of {len(vector)} numbers, "
                        f"not {dimension}"
                    )
                rows.append((rowid, _pack(vector)))
            self._db.executemany("INSERT INTO vectors VALUES (?, ?)", rows)
            report.embedded += len(rows)

    def _index_file(self, absolute: Path, key: str, info: os.stat_result, report: IndexReport) -> None:
        row = self._db.execute(
            "SELECT id, size, mtime_ns, sha256 FROM documents WHERE path = ?", (key,)
        ).fetchone()
        if row is not None and (row[1], row[2]) == (info.st_size, info.st_mtime_ns):
            report.unchanged += 1
            return
        try:
            data = absolute.read_bytes()
        except OSError:
            report.skip("unreadable")
            return
        digest = hashlib.sha256(data).hexdigest()
        if row is not None and row[3] == digest:
            self._db.execute(
                "UPDATE documents SET size = ?, mtime_ns = ? WHERE id = ?",
                (info.st_size, info.st_mtime_ns, row[0]),
            )
            report.unchanged += 1
            return
        text = _decode(data)
        if text is None:
            if row is not None:
                self._forget(row[0])
                report.removed += 1
            report.skip("binary or not UTF-8")
            return
        if row is not None:
            self._drop_passages(row[0], keep_vectors=True)
            self._db.execute(
                "UPDATE documents SET size = ?, mtime_ns = ?, sha256 = ?, indexed_at = ? WHERE id = ?",
                (info.st_size, info.st_mtime_ns, digest, time.time(), row[0]),
            )
            doc_id = row[0]
            report.updated += 1
        else:
            cursor = self._db.execute(
                "INSERT INTO documents (path, size, mtime_ns, sha256, indexed_at) VALUES (?, ?, ?, ?, ?)",
                (key, info.st_size, info.st_mtime_ns, digest, time.time()),
            )
            doc_id = cursor.lastrowid
            report.added += 1
        passages = chunk_lines(text)
        self._db.executemany(
            "INSERT INTO passages (text, path, start_line, end_line, doc_id) VALUES (?, ?, ?, ?, ?)",
            [(p.text, key, p.start_line, p.end_line, doc_id) for p in passages],
        )
        report.passages += len(passages)

    def _drop_passages(self, doc_id: int, *, keep_vectors: bool = False) -> None:
        """Delete a document's passages and their vectors; with ``keep_vectors`` the vectors stay at hand,
        by passage text, for this run to give back to passages whose text did not change."""
        rows = self._db.execute(
            "SELECT p.rowid, p.text, v.vector FROM passages p LEFT JOIN vectors v ON v.passage_id = p.rowid "
            "WHERE p.doc_id = ?",
            (doc_id,),
        ).fetchall()
        for _, text, vector in rows:
            if keep_vectors and vector is not None:
                self._reusable[_digest(text)] = vector
        self._db.executemany("DELETE FROM vectors WHERE passage_id = ?", [(rowid,) for rowid, _, _ in rows])
        self._db.execute("DELETE FROM passages WHERE doc_id = ?", (doc_id,))

    def _forget(self, doc_id: int) -> None:
        self._drop_passages(doc_id)
        self._db.execute("DELETE FROM documents WHERE id = ?", (doc_id,))

    def _prune(self, covered: list[str], seen: set[str]) -> int:
        removed = 0
        for doc_id, path in self._db.execute("SELECT id, path FROM documents").fetchall():
            if path in seen:
                continue
            if any(_covers(root, path) for root in covered):
                self._forget(doc_id)
                removed += 1
        return removed

    # -- searching --------------------------------------------------------------------------------------

    def search(
        self, query: str, *, limit: int = 8, embedders: EmbedderLoader | None = None
    ) -> KnowledgeOutcome:
        """The best passages for ``query``: BM25 alone, or, when the index holds vectors and ``embedders``
        can load their model, BM25 and cosine similarity fused by reciprocal rank. When the model cannot be
        loaded the answer is BM25's and ``note`` says why."""
        limit = max(1, min(limit, 50))
        documents = self._db.execute("SELECT count(*) FROM documents").fetchone()[0]
        expression = match_expression(query)
        lexical: list[int] = []
        found: dict[int, tuple[str, int, int, str]] = {}
        bm25: dict[int, float] = {}
        if expression is not None:
            for rowid, path, start, end, text, rank in self._db.execute(
                "SELECT rowid, path, start_line, end_line, text, bm25(passages) AS rank FROM passages "
                "WHERE passages MATCH ? ORDER BY rank LIMIT ?",
                (expression, max(limit, CANDIDATES)),
            ):
                lexical.append(rowid)
                found[rowid] = (path, int(start), int(end), text)
                bm25[rowid] = -rank
        semantic, note = self._nearest(query, embedders)
        if semantic is None:
            passages = tuple(
                _passage(found[rowid], round(bm25[rowid], 4), ("bm25",)) for rowid in lexical[:limit]
            )
            return KnowledgeOutcome(indexed=True, passages=passages, documents=documents, note=note)
        fused: dict[int, float] = {}
        for ranking in (lexical, semantic):
            for rank, rowid in enumerate(ranking, start=1):
                fused[rowid] = fused.get(rowid, 0.0) + 1.0 / (RRF_K + rank)
        in_lexical = set(lexical)
        in_semantic = set(semantic)
        order = sorted(fused, key=lambda rowid: (-fused[rowid], rowid))[:limit]
        unseen = [rowid for rowid in order if rowid not in found]
        if unseen:
            marks = ",".join("?" * len(unseen))
            for rowid, path, start, end, text in self._db.execute(
                f"SELECT rowid, path, start_line, end_line, text FROM passages WHERE rowid IN ({marks})",
                unseen,
            ):
                found[rowid] = (path, int(start), int(end), text)
        passages = tuple(
            _passage(
                found[rowid],
                round(fused[rowid], 5),
                tuple(
                    name for name, hits in (("bm25", in_lexical), ("vector", in_semantic)) if rowid in hits
                ),
            )
            for rowid in order
            if rowid in found
        )
        return KnowledgeOutcome(
            indexed=True, passages=passages, documents=documents, method="bm25+vector", note=note
        )

    def _nearest(self, query: str, embedders: EmbedderLoader | None) -> tuple[list[int] | None, str]:
        """Passage ids by cosine similarity to ``query`` (best first), or None and why not when the index has
        no vectors ("" then) or their model cannot be used now."""
        model = _meta(self._db, _MODEL_KEY)
        if model is None or not self._has_vectors():
            return None, ""
        dimension = int(_meta(self._db, _DIMENSION_KEY) or 0)
        fallback = "vectors not used, BM25 only: "
        if embedders is None:
            return None, fallback + "no embedding model loader was given"
        try:
            embedder = embedders(model)
            if embedder.model_id != model or embedder.dimension != dimension:
                return None, fallback + (
                    f"the index was embedded with {model} ({dimension} dimensions) but the model loaded is "
                    f"{embedder.model_id} ({embedder.dimension}); run `seepient knowledge index` again"
                )
            (vector,) = embedder.encode([query])
        except EmbedderUnavailable as exc:
            return None, fallback + str(exc)
        probe = _normalised(vector)
        if probe is None:
            return None, ""
        scored = heapq.nlargest(
            CANDIDATES,
            (
                (similarity, rowid)
                for rowid, similarity in (
                    (rowid, _dot(probe, blob))
                    for rowid, blob in self._db.execute("SELECT passage_id, vector FROM vectors")
                )
                if similarity >= VECTOR_MIN_SIMILARITY
            ),
        )
        return [rowid for _, rowid in scored], ""

    def _has_vectors(self) -> bool:
        try:
            return self._db.execute("SELECT 1 FROM vectors LIMIT 1").fetchone() is not None
        except sqlite3.OperationalError:  # an index built before vectors existed, opened read-only
            return False


def _passage(row: tuple[str, int, int, str], score: float, matched: tuple[str, ...]) -> KnowledgePassage:
    """A found passage (its path, first and last line, text) as the search answers it."""
    path, start_line, end_line, text = row
    return KnowledgePassage(
        path=path, start_line=start_line, end_line=end_line, score=score, text=text, matched=matched
    )


def _meta(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _normalised(vector: Sequence[float]) -> array[float] | None:
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0 or not math.isfinite(norm):
        return None
    return array("f", (x / norm for x in vector))


def _pack(vector: Sequence[float]) -> bytes:
    """A passage's vector as stored: unit length (so a dot product is the cosine), float32, native order."""
    unit = _normalised(vector)
    return (unit if unit is not None else array("f", vector)).tobytes()


def _dot(probe: array[float], blob: bytes) -> float:
    stored = array("f")
    stored.frombytes(blob)
    if len(stored) != len(probe):
        return -1.0
    return sum(map(operator.mul, probe, stored))


def _covers(root: str, path: str) -> bool:
    """Whether the document ``path`` lies under the indexed ``root`` (both named as ``_key`` names them)."""
    if root == "":
        return not path.startswith("/")
    return path == root or path.startswith(root.rstrip("/") + "/")


def _key(absolute: Path, workspace: Path) -> str:
    """How a document is named in the index: workspace-relative inside it ('' for the workspace), else absolute."""
    if absolute == workspace:
        return ""
    if absolute.is_relative_to(workspace):
        return absolute.relative_to(workspace).as_posix()
    return absolute.as_posix()


def _files(root: Path) -> Iterator[tuple[Path, os.stat_result]]:
    if root.is_file():
        yield root, root.stat()
        return
    if not root.is_dir():
        raise KnowledgeIndexError(f"{root}: no such file or folder to index")
    for relative, info in TreeWalker(root).files():
        yield root / relative, info


def search_index(
    path: Path, query: str, *, limit: int = 8, embedders: EmbedderLoader | None = load_embedder
) -> KnowledgeOutcome:
    """Search the index at ``path`` read-only; ``indexed=False`` when none was built. ``embedders`` loads
    the model the index's vectors were made with (by default from local files only)."""
    try:
        index = KnowledgeIndex(path)
    except FileNotFoundError:
        return KnowledgeOutcome(indexed=False)
    with index:
        return index.search(query, limit=limit, embedders=embedders)


def read_index(index: Path, query: str, *, limit: int) -> KnowledgeOutcome:
    """``search_index`` as the executor's ``KnowledgeIndexReader``: an index that cannot be read is an outcome
    saying why, not an exception."""
    try:
        return search_index(index, query, limit=limit)
    except KnowledgeIndexError as exc:
        return KnowledgeOutcome(indexed=False, problem=str(exc))
