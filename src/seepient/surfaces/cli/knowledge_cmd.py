"""``seepient knowledge index [PATHS]`` builds or refreshes the workspace's local knowledge index (the only
writer of it); ``seepient knowledge search QUERY`` asks it the way the ``knowledge_search`` tool does."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Annotated

import typer

from seepient.surfaces.cli import exit_codes

knowledge_app = typer.Typer(
    help="Build and search the local knowledge index the knowledge_search tool reads.", no_args_is_help=True
)

_Workspace = Annotated[Path, typer.Option(help="The project the index belongs to.")]
_Config = Annotated[
    Path | None, typer.Option(help="An extra settings file (JSON), applied over user and project settings.")
]
_Json = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def _embedding_note() -> str:
    # Models are never downloaded at run time; only an already-installed package could be used.
    if importlib.util.find_spec("sentence_transformers") is None:
        return "BM25 only: no local embedding model is installed (sentence-transformers not found); nothing is downloaded"
    return "BM25 only: sentence-transformers is installed, but embedding ranking is not used yet"


def _workspace(workspace: Path) -> Path:
    ws = workspace.expanduser()
    if not ws.is_dir():
        typer.echo(f"seepient: workspace {ws} is not a directory", err=True)
        raise typer.Exit(exit_codes.USAGE)
    return ws.resolve()


@knowledge_app.command("index")
def index(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Files or folders to index (default: the workspace). Ignore files are honoured."),
    ] = None,
    workspace: _Workspace = Path("."),
    config: _Config = None,
    json_output: _Json = False,
) -> None:
    """Index text, markdown and code under PATHS into passages (path and line range) for BM25 search.

    Re-running it updates only files whose size and time (or content) changed, and drops files that are
    gone. Files policy refuses to read (secrets, Seepient's own state, Read deny rules) are left out.
    Exit codes: 0 indexed, 2 bad usage or configuration.
    """
    from seepient.config import SeepientPaths
    from seepient.config.settings import SettingsError, load_settings
    from seepient.context.knowledge import KnowledgeIndex, KnowledgeIndexError, fts5_available
    from seepient.policy.engine import PolicyEngine
    from seepient.protocol import ActionKind, Decision, PreparedActionDraft, ReadAction

    ws = _workspace(workspace)
    roots = [path.expanduser().resolve() for path in (paths or [ws])]
    missing = [str(root) for root in roots if not root.exists()]
    if missing:
        typer.echo(f"seepient: no such file or folder to index: {', '.join(missing)}", err=True)
        raise typer.Exit(exit_codes.USAGE)
    if not fts5_available():
        typer.echo(
            "seepient: this Python's SQLite has no FTS5, which the knowledge index needs; use a Python whose "
            "sqlite3 module is built with FTS5 (the python.org and Debian builds are)",
            err=True,
        )
        raise typer.Exit(exit_codes.USAGE)
    seepient_paths = SeepientPaths.from_env()
    try:
        settings = load_settings(ws, paths=seepient_paths, config_file=config)
        engine = PolicyEngine(
            ws, seepient_home=seepient_paths.home, mode="ask-untrusted", permissions=settings.permissions
        )
    except SettingsError as exc:
        typer.echo(f"seepient: {exc}", err=True)
        raise typer.Exit(exit_codes.USAGE) from None

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
    try:
        with KnowledgeIndex(target, writable=True) as built:
            report = built.update(roots, workspace=ws, skip=refused)
    except KnowledgeIndexError as exc:
        typer.echo(f"seepient: {exc}", err=True)
        raise typer.Exit(exit_codes.USAGE) from None
    note = _embedding_note()
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
                    "ranking": "bm25",
                    "embeddings": False,
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
    workspace: _Workspace = Path("."),
    json_output: _Json = False,
) -> None:
    """Print the best-matching passages with path:lines and score, as knowledge_search ranks them.

    Exit codes: 0 found, 1 nothing found or no index yet, 2 bad usage.
    """
    from seepient.config import SeepientPaths
    from seepient.context.knowledge import KnowledgeIndexError, search_index

    ws = _workspace(workspace)
    target = SeepientPaths.from_env().knowledge_index(ws)
    try:
        outcome = search_index(target, query, limit=limit)
    except KnowledgeIndexError as exc:
        typer.echo(f"seepient: {exc}", err=True)
        raise typer.Exit(exit_codes.USAGE) from None
    if json_output:
        typer.echo(outcome.model_dump_json())
    elif not outcome.indexed:
        typer.echo(f"no knowledge index for {ws} yet: run `seepient knowledge index` first", err=True)
    else:
        for passage in outcome.passages:
            typer.echo(f"{passage.path}:{passage.start_line}-{passage.end_line} (score {passage.score:.2f})")
            for line in passage.text.splitlines()[:6]:
                typer.echo(f"    {line}")
    raise typer.Exit(exit_codes.OK if outcome.passages else exit_codes.FAILED)


def register(app: typer.Typer) -> None:
    app.add_typer(knowledge_app, name="knowledge")
