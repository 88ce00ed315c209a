"""``seepient commit``: the commit route writes a message for the staged changes; after approval the
``git commit`` runs as a prepared shell action through policy, approval, the sandbox and the audit log."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from seepient.surfaces.cli import exit_codes
from seepient.surfaces.cli.failure import fail
from seepient.surfaces.cli.options import BaseUrl, ConfigFile, Model, Workspace

_MAX_DIFF_CHARS = 60_000
"""Enough for a reviewer-sized change; a larger diff is cut so the request stays inside any model's window."""

_DELIMITER = "SEEPIENT_COMMIT_MESSAGE"

_INSTRUCTIONS = (
    "You write git commit messages. Given the staged diff, answer with the commit message only: a summary "
    "line of at most 72 characters in the imperative mood, then, when the change needs it, a blank line and "
    "a short body saying what changed and why. No code fences, no preamble, no trailers."
)


def _clean_message(text: str) -> str:
    """The model's answer as a commit message: fences it was told not to write are dropped, and a line that
    would end the heredoc early is refused rather than rewritten."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    if lines and lines[0].startswith("```"):
        lines = lines[1:]
    if lines and lines[-1].startswith("```"):
        lines = lines[:-1]
    message = "\n".join(lines).strip()
    if any(line.strip() == _DELIMITER for line in lines):
        raise fail(f"the model's message contains the line {_DELIMITER}; run seepient commit again")
    return message


def commit_command_line(message: str) -> str:
    """``git commit -F -`` with the message on stdin as a quoted heredoc, so the shell expands nothing in it."""
    return f"git commit -F - <<'{_DELIMITER}'\n{message}\n{_DELIMITER}\n"


async def _staged_diff(workspace: Path, seepient_home: Path) -> str:
    # Seepient's own read, not a model's command, but it still runs in the sandbox: git honours repository
    # configuration (diff drivers, textconv) that could run code.
    from seepient.execution.jail import run_sandboxed

    outcome = await run_sandboxed(
        ["git", "diff", "--cached", "--no-color", "--no-ext-diff"],
        workspace=workspace,
        cwd=workspace,
        seepient_home=seepient_home,
        timeout_s=60,
    )
    if outcome.exit_code != 0:
        detail = outcome.stderr.strip() or f"exit code {outcome.exit_code}"
        raise fail(f"git diff --cached failed in {workspace}: {detail}", exit_codes.FAILED)
    return outcome.stdout


async def _write_message(session: object, diff: str) -> str:
    from seepient.protocol import Completion, Message, ModelRequest, TextChunk
    from seepient.runtime import Session

    assert isinstance(session, Session)
    model = session.model_for("commit")
    if len(diff) > _MAX_DIFF_CHARS:
        diff = diff[:_MAX_DIFF_CHARS] + f"\n[diff cut at {_MAX_DIFF_CHARS} characters]\n"
    request = ModelRequest(
        model=model.name.split(":", 1)[1] if ":" in model.name else model.name,
        messages=(Message.system(_INSTRUCTIONS), Message.user(f"The staged diff:\n\n{diff}")),
    )
    text = ""
    async for event in model.stream(request):
        if isinstance(event, TextChunk):
            text += event.text
        elif isinstance(event, Completion):
            text = event.message.content or text
    return text


def commit(
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Commit with the written message without asking.")
    ] = False,
    model: Model = None,
    base_url: BaseUrl = None,
    workspace: Workspace = Path("."),
    config: ConfigFile = None,
) -> None:
    """Write a commit message for the staged changes of WORKSPACE with the commit route (--model replaces its
    primary), show it, and commit after approval. Headless without -y it only prints the message."""
    from seepient.approval.terminal import TerminalApprover
    from seepient.config import SeepientPaths
    from seepient.models.base import ModelError
    from seepient.protocol import SandboxUnavailable, ToolCall, ToolResult, new_id
    from seepient.surfaces.cli.options import open_session
    from seepient.surfaces.cli.render import HumanRenderer

    interactive = sys.stdin.isatty()
    paths = SeepientPaths.from_env()
    session = open_session(
        workspace=workspace,
        model=model,
        base_url=base_url,
        auto_approve=yes,
        approver=TerminalApprover(out=sys.stderr) if interactive and not yes else None,
        config_file=config,
        paths=paths,
    )
    results: list[ToolResult] = []
    session.subscribe(lambda event: results.append(event) if isinstance(event, ToolResult) else None)
    session.subscribe(HumanRenderer(out=sys.stderr))

    async def _main() -> int:
        try:
            diff = await _staged_diff(session.workspace, paths.home)
            if not diff.strip():
                raise fail("nothing is staged: git add the changes to commit first")
            try:
                message = _clean_message(await _write_message(session, diff))
            except ModelError as exc:
                raise fail(f"the commit route failed: {exc}", exit_codes.FAILED) from None
            if not message:
                raise fail("the model wrote an empty commit message", exit_codes.FAILED)
            typer.echo(message)
            if not (yes or interactive):
                typer.echo("seepient: not committed: run again with -y to commit with this message", err=True)
                return exit_codes.OK
            call = ToolCall(
                id=new_id("call"), name="shell", arguments={"command": commit_command_line(message)}
            )
            outcome = await session.perform(call)
            committed = outcome.status == "ok" and any(r.data.get("exit_code") == 0 for r in results)
            return exit_codes.OK if committed else exit_codes.FAILED
        finally:
            await session.aclose()

    try:
        code = asyncio.run(_main())
    except SandboxUnavailable as exc:
        raise fail(str(exc), exit_codes.SANDBOX_UNAVAILABLE) from None
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("commit")(commit)
