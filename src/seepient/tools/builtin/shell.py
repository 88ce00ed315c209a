"""``shell``: a command line analysed into its simple commands and the capabilities it needs, then run in
the sandbox by the executor with a bounded timeout."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field

from seepient.protocol import (
    ApprovedAction,
    PathDenied,
    PreparedActionDraft,
    ShellCommand,
    ShellOutcome,
)
from seepient.protocol.fields import same_named
from seepient.shell import analyse_command
from seepient.tools.base import NonEmpty, Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import (
    display_path,
    execute_as,
    expect_payload,
    path_kind,
    stream_sections,
)
from seepient.tools.builtin.shell_background import start_background

MAX_TIMEOUT_MS = 600_000
_SUMMARY_COMMAND_CHARS = 120


class ShellInput(ToolInput):
    command: NonEmpty
    """The bash command line to run, e.g. 'pytest -q tests/test_calc.py'. It runs in a sandbox that can write
    only inside the workspace and has no network unless approved."""
    timeout_ms: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TIMEOUT_MS,
        description=f"How long the command may run, in milliseconds (at most {MAX_TIMEOUT_MS}, ten minutes). "
        "Omit for the session's default.",
    )
    workdir: str | None = None
    """The directory to run in, relative to the workspace root; it must be inside the workspace. Omit to run
    at the workspace root. Prefer this over 'cd dir && ...'."""
    run_in_background: bool = False
    """Start the command and return at once with an id (bg_…), for servers, watchers and long builds; read its
    output with shell_output and stop it with shell_kill. timeout_ms then limits its lifetime (omit it to let
    it run until it exits, is killed or the session ends)."""


def _one_line(command: str) -> str:
    first, *rest = command.strip().splitlines() or [""]
    shown = first if not rest else f"{first} …"
    if len(shown) > _SUMMARY_COMMAND_CHARS:
        shown = shown[: _SUMMARY_COMMAND_CHARS - 1] + "…"
    return shown


class ShellTool(Tool[ShellInput]):
    """Run a bash command line in the workspace inside a sandbox and return its exit code, stdout and stderr.
    Use it for builds, tests, git and other programs; use read_file, glob, grep and edit_file for reading,
    finding and changing files. Commands time out (default from the session, at most ten minutes); long output
    is cut in the middle. A non-zero exit code is reported, not hidden."""

    name: ClassVar[str] = "shell"
    runs_foreground_commands: ClassVar[bool] = True

    async def prepare(self, args: ShellInput, ctx: ToolContext) -> PreparedActionDraft:
        if not args.command.strip():
            raise ToolInputError("command is blank; give the command line to run.")
        resolved = ctx.paths.for_read(args.workdir or ".")
        if resolved.relative is None:
            raise PathDenied(
                args.workdir or ".",
                "the shell's working directory must be inside the workspace",
                "workspace_containment",
            )
        if args.workdir is not None:
            # bubblewrap would fail to chdir and report it as the command's exit status; say it plainly.
            kind = await path_kind(ctx, resolved.absolute)
            if kind != "directory":
                problem = "does not exist" if kind == "missing" else "is a file, not a directory"
                raise ToolInputError(
                    f"workdir {args.workdir!r} {problem}. Give an existing directory inside the workspace, or "
                    "omit workdir to run at the workspace root."
                )
        # With the workspace and cwd, write targets resolve to write_workspace or write_outside exactly.
        analysis = analyse_command(args.command, cwd=Path(resolved.absolute), workspace=ctx.workspace)
        timeout_ms = min(args.timeout_ms or ctx.default_timeout_ms, MAX_TIMEOUT_MS)
        if args.run_in_background:
            timeout_ms = args.timeout_ms or 0  # 0: no deadline, see ShellCommand.background
        payload = ShellCommand(
            command=args.command,
            cwd=resolved.absolute,
            timeout_ms=timeout_ms,
            background=args.run_in_background,
            **same_named(analysis, ("commands", "capabilities", "parsed")),
        )
        verb = "Start in the background" if args.run_in_background else "Run"
        summary = f"{verb}: {_one_line(args.command)} (in {display_path(resolved)})"
        return ctx.draft(self.name, payload, summary=summary)

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        command = expect_payload(action, ShellCommand)
        if command.background:
            return await start_background(command, action, ctx)
        outcome = await execute_as(ctx, action, ShellOutcome)
        return ToolOutput(
            format_shell_outcome(command, outcome),
            is_error=outcome.timed_out,
            data=same_named(outcome, _DATA_FIELDS),
        )


_DATA_FIELDS = ("exit_code", "timed_out", "duration_ms", "sandbox", "stdout_truncated", "stderr_truncated")


def format_shell_outcome(command: ShellCommand, outcome: ShellOutcome) -> str:
    """Exit status first (what the model needs to decide), then each stream, then what was cut or stopped."""
    if outcome.timed_out:
        head = f"Timed out after {command.timeout_ms} ms; the command was killed"
        head += f" (exit code {outcome.exit_code})." if outcome.exit_code is not None else "."
    elif outcome.exit_code is None:
        head = "The command ended without an exit code (killed by a signal?)."
    else:
        head = f"Exit code: {outcome.exit_code}"
    streams = (("stdout", outcome.stdout_truncated), ("stderr", outcome.stderr_truncated))
    notes = [
        f"[{stream} was longer than the output limit and was cut; redirect it to a file and read that, or "
        "filter it (grep, tail) if you need the rest.]"
        for stream, cut in streams
        if cut
    ]
    return "\n\n".join([head, *stream_sections(outcome.stdout, outcome.stderr), *notes])
