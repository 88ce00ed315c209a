"""``knowledge_search``: ranked passages, with their sources, from the local index of documents the user built
with ``seepient knowledge index``. Read only: the tool never builds or changes the index."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from seepient.protocol import ApprovedAction, PathDenied, PreparedActionDraft
from seepient.protocol.actions import KnowledgeQuery
from seepient.protocol.retrieval import KnowledgeOutcome, KnowledgePassage
from seepient.tools.base import Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import execute_as, expect_payload

MAX_PASSAGE_CHARS = 2_000
NO_INDEX = (
    "No knowledge index exists for this workspace yet. The user can build one with "
    "`seepient knowledge index [PATHS]`; until then, search the files with grep and glob."
)


class KnowledgeSearchInput(ToolInput):
    query: str = Field(min_length=1, max_length=1_000)
    """What to look for, in words (e.g. 'how are API tokens rotated'); ranked by BM25, fused with embedding
    similarity when the index has vectors."""
    limit: int = Field(default=8, ge=1, le=30)
    """How many passages to return (default 8)."""


class KnowledgeSearchTool(Tool[KnowledgeSearchInput], read_only=True, concurrency_safe=True):
    """Search the local knowledge index of this workspace's documents (docs, notes, code the user indexed) and
    get the best-matching passages with their source as path:first-last lines and a relevance score. Good for
    questions in words; for exact strings use grep. Read the full file with read_file when a passage is not
    enough."""

    name: ClassVar[str] = "knowledge_search"

    async def prepare(self, args: KnowledgeSearchInput, ctx: ToolContext) -> PreparedActionDraft:
        query = " ".join(args.query.split())
        if not any(ch.isalnum() for ch in query):
            raise ToolInputError("knowledge_search needs words to look for, not only punctuation")
        return ctx.draft(
            self.name,
            KnowledgeQuery(query=query, limit=args.limit),
            summary=f"Search the knowledge index for {query!r}",
        )

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        query = expect_payload(action, KnowledgeQuery)
        outcome = await execute_as(ctx, action, KnowledgeOutcome)
        if not outcome.indexed:
            text = f"{outcome.problem}" if outcome.problem else NO_INDEX
            return ToolOutput(text, is_error=bool(outcome.problem), data={"indexed": False})
        shown: list[KnowledgePassage] = []
        withheld = 0
        for passage in outcome.passages:
            # The index may predate a deny rule or hold a file since made sensitive: what read_file would
            # refuse to show, the search does not show either.
            if _refused(ctx, passage.path):
                withheld += 1
                continue
            shown.append(passage)
        data: dict[str, Any] = {
            "indexed": True,
            "method": outcome.method,
            "documents": outcome.documents,
            "results": [
                {
                    "path": p.path,
                    "lines": [p.start_line, p.end_line],
                    "score": p.score,
                    "matched": list(p.matched),
                }
                for p in shown
            ],
        }
        if outcome.note:
            data["note"] = outcome.note
        if not shown:
            text = f"No passage matches {query.query!r} in the index ({outcome.documents} documents)."
            if withheld:
                text += f" {withheld} match(es) in files you may not read were left out."
            if outcome.note:
                text += f" ({outcome.note})"
            return ToolOutput(text, data=data)
        blocks = [
            f"{len(shown)} passage(s) for {query.query!r} ({outcome.method} over {outcome.documents} documents):"
        ]
        if outcome.note:
            blocks.append(f"Note: {outcome.note}")
        for rank, passage in enumerate(shown, start=1):
            body = passage.text
            if len(body) > MAX_PASSAGE_CHARS:
                body = body[:MAX_PASSAGE_CHARS] + "\n[passage cut]"
            blocks.append(
                f"[{rank}] {passage.path or '.'}:{passage.start_line}-{passage.end_line} "
                f"(score {passage.score:.4g}, matched {'+'.join(passage.matched)})\n{body}"
            )
        if withheld:
            blocks.append(f"({withheld} match(es) in files you may not read were left out.)")
        return ToolOutput("\n\n".join(blocks), data=data)


def _refused(ctx: ToolContext, path: str) -> bool:
    try:
        ctx.paths.for_read(path)
    except PathDenied:
        return True
    return False
