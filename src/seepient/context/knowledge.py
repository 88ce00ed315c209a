"""The local knowledge index: documents cut into passages (path and line range) in SQLite FTS5, ranked by BM25.

``seepient knowledge index`` builds and refreshes it (files whose size and mtime, or else content hash, are
unchanged are skipped); the ``knowledge_search`` tool only ever opens it read-only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from seepient.execution.search import TreeWalker
from seepient.protocol.retrieval import KnowledgeOutcome, KnowledgePassage

SCHEMA_VERSION = "1"
PASSAGE_LINES = 40
PASSAGE_OVERLAP = 8
PASSAGE_MAX_CHARS = 4_000
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_QUERY_TERMS = 32
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
"""

SkipCheck = Callable[[Path], str | None]
"""Why a file must stay out of the index (a secret, Seepient's own state), or None when it may go in."""


class KnowledgeIndexError(Exception):
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
        if writable:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._db = sqlite3.connect(path)
            try:
                self._db.executescript(_SCHEMA)
            except sqlite3.OperationalError as exc:
                self._db.close()
                raise KnowledgeIndexError(
                    f"{path}: cannot create the index ({exc}); is FTS5 available?"
                ) from None
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
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
    ) -> IndexReport:
        """Index every text file under ``roots`` (files or folders; ignore files honoured, ``.git`` and
        symlinks skipped). With ``prune``, documents under the roots that are gone (or now skipped) leave the
        index. One transaction: an interrupted run leaves the index as it was."""
        report = IndexReport()
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
        return report

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
            self._db.execute("DELETE FROM passages WHERE doc_id = ?", (row[0],))
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

    def _forget(self, doc_id: int) -> None:
        self._db.execute("DELETE FROM passages WHERE doc_id = ?", (doc_id,))
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

    def search(self, query: str, *, limit: int = 8) -> KnowledgeOutcome:
        documents = self._db.execute("SELECT count(*) FROM documents").fetchone()[0]
        expression = match_expression(query)
        if expression is None:
            return KnowledgeOutcome(indexed=True, documents=documents)
        rows = self._db.execute(
            "SELECT path, start_line, end_line, text, bm25(passages) AS rank FROM passages "
            "WHERE passages MATCH ? ORDER BY rank LIMIT ?",
            (expression, max(1, min(limit, 50))),
        ).fetchall()
        passages = tuple(
            KnowledgePassage(
                path=path, start_line=int(start), end_line=int(end), score=round(-rank, 4), text=text
            )
            for path, start, end, text, rank in rows
        )
        return KnowledgeOutcome(indexed=True, passages=passages, documents=documents)


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


def search_index(path: Path, query: str, *, limit: int = 8) -> KnowledgeOutcome:
    """Search the index at ``path`` read-only; ``indexed=False`` when none was built."""
    try:
        index = KnowledgeIndex(path)
    except FileNotFoundError:
        return KnowledgeOutcome(indexed=False)
    with index:
        return index.search(query, limit=limit)
