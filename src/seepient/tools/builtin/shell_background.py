"""Background shell: ``shell`` with ``run_in_background`` starts a sandboxed command and returns its ``bg_…`` id;
``shell_output`` reads what it wrote since the last read; ``shell_kill`` stops its whole process group."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from seepient.protocol.actions import PreparedActionDraft, ProcessControl, ShellCommand
from seepient.protocol.approved import ApprovedAction
from seepient.protocol.fields import same_named
from seepient.protocol.outcomes import BackgroundOutput, BackgroundStarted
from seepient.protocol.refusals import BackgroundRefused
from seepient.tools.base import Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import execute_as, expect_payload, stream_sections

_ID_FIELD = Field(
    min_length=1,
    max_length=64,
    description="The background process id that shell returned when it started the command (bg_…).",
)


async def start_background(command: ShellCommand, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
    """The execution of an approved ``shell`` call with ``run_in_background``."""
    try:
        started = await execute_as(ctx, action, BackgroundStarted)
    except BackgroundRefused as exc:
        return ToolOutput(f"Not started: {exc}.", is_error=True, data={"background": True})
    limit = (
        f"it is killed after {command.timeout_ms} ms"
        if command.timeout_ms > 0
        else "it runs until it exits, shell_kill stops it, or the session ends"
    )
    text = (
        f"Started in the background with id {started.process_id} ({limit}). Read its output with "
        f"shell_output {{id: {started.process_id}}}; stop it with shell_kill."
    )
    return ToolOutput(
        text, data={"background": True, "process_id": started.process_id, "sandbox": started.sandbox}
    )


class ShellOutputInput(ToolInput):
    id: str = _ID_FIELD


class ShellKillInput(ToolInput):
    id: str = _ID_FIELD


def _draft(tool: str, operation: str, process_id: str, ctx: ToolContext, summary: str) -> PreparedActionDraft:
    return ctx.draft(
        tool,
        ProcessControl(operation=operation, process_id=process_id),  # type: ignore[arg-type]
        read_only=operation == "output",
        summary=summary,
    )


def format_background_output(output: BackgroundOutput) -> str:
    """State first, then each stream's new output, then what was dropped and how to keep it next time."""
    seconds = output.runtime_ms / 1000
    if output.running:
        head = f"{output.process_id} is running ({seconds:.1f} s so far)."
    else:
        why = {
            "kill": "killed by shell_kill",
            "timeout": "killed at its timeout",
            "session_end": "killed because the session ended",
        }
        code = (
            "no exit code (killed by a signal)"
            if output.exit_code is None
            else f"exit code {output.exit_code}"
        )
        if output.exit_code is not None and output.exit_code < 0:
            code = f"killed by signal {-output.exit_code}"
        reason = f", {why[output.ended_by]}" if output.ended_by else ""
        head = f"{output.process_id} has ended after {seconds:.1f} s: {code}{reason}."
    parts = [head, *stream_sections(output.stdout, output.stderr, new=True)]
    for stream, dropped in (("stdout", output.stdout_dropped), ("stderr", output.stderr_dropped)):
        if dropped:
            parts.append(
                f"[{dropped} bytes of earlier {stream} were dropped (only the newest output is kept); "
                "redirect the command's output to a file if you need all of it.]"
            )
    return "\n\n".join(parts)


_DATA_FIELDS = ("process_id", "running", "exit_code", "ended_by", "stdout_dropped", "stderr_dropped")


async def _answer(ctx: ToolContext, action: ApprovedAction, *, refused: str = "") -> ToolOutput:
    """The background process's state and new output, or why the executor refused (after ``refused``)."""
    try:
        output = await execute_as(ctx, action, BackgroundOutput)
    except BackgroundRefused as exc:
        return ToolOutput(f"{refused}{exc}.", is_error=True)
    return ToolOutput(format_background_output(output), data=same_named(output, _DATA_FIELDS))


class ShellOutputTool(Tool[ShellOutputInput], read_only=True, concurrency_safe=True):
    """Read what a background command (started by shell with run_in_background) wrote since the last read, and
    whether it still runs or its exit code. Only the newest output is kept; the result says how much was
    dropped."""

    name: ClassVar[str] = "shell_output"

    async def prepare(self, args: ShellOutputInput, ctx: ToolContext) -> PreparedActionDraft:
        return _draft(self.name, "output", args.id, ctx, f"Read the output of background process {args.id}")

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        expect_payload(action, ProcessControl)
        return await _answer(ctx, action)


class ShellKillTool(Tool[ShellKillInput]):
    """Stop a background command that shell started with run_in_background, with every process it spawned, and
    return its last output."""

    name: ClassVar[str] = "shell_kill"

    async def prepare(self, args: ShellKillInput, ctx: ToolContext) -> PreparedActionDraft:
        if not args.id.startswith("bg_"):
            raise ToolInputError(
                f"{args.id!r} is not a background process id: give the bg_… id that shell returned (process "
                "numbers are not accepted)"
            )
        return _draft(self.name, "kill", args.id, ctx, f"Kill background process {args.id}")

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        expect_payload(action, ProcessControl)
        return await _answer(ctx, action, refused="Not killed: ")
