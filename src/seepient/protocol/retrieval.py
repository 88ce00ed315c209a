"""What the executor's look-ups answer: passages from the local knowledge index and hits from a web search."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from seepient.protocol.errors import ExecutionError
from seepient.protocol.frozen import FrozenModel


class KnowledgePassage(FrozenModel):
    """One ranked passage: ``path`` as indexed (workspace-relative when inside it), 1-based inclusive lines,
    and ``score`` (higher is better: BM25 turned positive, or the fused reciprocal-rank score when vectors
    ranked too). ``matched`` names the rankings that found it: ``bm25``, ``vector`` or both."""

    path: str
    start_line: int
    end_line: int
    score: float
    text: str
    matched: tuple[str, ...] = ("bm25",)


class KnowledgeOutcome(FrozenModel):
    """``indexed`` is false when no index exists for the workspace yet (``problem`` says why when one exists
    but cannot be read); ``method`` says how it ranked (``bm25`` or ``bm25+vector``); ``note`` says why the
    index's vectors were not used when it has some."""

    indexed: bool
    problem: str = ""
    passages: tuple[KnowledgePassage, ...] = ()
    method: str = "bm25"
    documents: int = 0
    note: str = ""


class WebSearchHit(FrozenModel):
    title: str
    url: str
    snippet: str = ""


class WebSearchOutcome(FrozenModel):
    backend: str
    hits: tuple[WebSearchHit, ...] = ()


class WebSearchFailed(ExecutionError, RuntimeError):
    """The search backend could not be reached or answered with an error; the message says which and what
    to do. It never contains the API key."""


class KnowledgeIndexReader(Protocol):
    """Searches the knowledge index at ``index`` read-only and answers with an outcome (``indexed=False`` and a
    ``problem`` when there is none or it cannot be read). The runtime hands the executor
    ``context.knowledge.read_index``, so execution never imports the knowledge index's own package."""

    def __call__(self, index: Path, query: str, *, limit: int) -> KnowledgeOutcome: ...
