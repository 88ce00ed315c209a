"""The terminal approver: shows the action on stderr (coloured diff or command and folder) and reads the answer.

Answers: ``y`` approve once; ``a`` approve for the session, then a scope among those offered (this exact
action, a command prefix, edits under a directory; Enter takes the exact action); ``p`` approve always for
this project (the rule to be written is shown first); ``n`` reject, then one line of feedback that goes back
to the model as the tool result; ``r`` reject and refuse the widest offered scope for the rest of the session.
Asks that no grant may answer offer only ``y``, ``n`` and ``r`` (which then refuses this exact action).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import TextIO

from seepient.approval.visible import shown
from seepient.protocol import (
    AgentTask,
    ApprovalDecision,
    ApprovalRequest,
    ApprovalResponse,
    ApprovalScope,
    FileChange,
    FileChangeSet,
    ShellCommand,
)
from seepient.protocol.actions import McpCall, McpServerStart, MemoryAction

_RESET = "\x1b[0m"
_STYLES = {"add": "\x1b[32m", "del": "\x1b[31m", "hunk": "\x1b[36m", "head": "\x1b[1m", "warn": "\x1b[33m"}


class _Rendered(str):
    """Text already passed through ``shown`` (and perhaps coloured): joined as it is."""


def _paint(text: str, style: str, colour: bool) -> str:
    text = shown(text)
    return _Rendered(f"{_STYLES[style]}{text}{_RESET}" if colour else text)


def render_diff(diff: str, *, colour: bool) -> str:
    lines = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            lines.append(_paint(line, "head", colour))
        elif line.startswith("+"):
            lines.append(_paint(line, "add", colour))
        elif line.startswith("-"):
            lines.append(_paint(line, "del", colour))
        elif line.startswith("@@"):
            lines.append(_paint(line, "hunk", colour))
        else:
            lines.append(shown(line))
    return _Rendered("\n".join(lines))


def render_request(request: ApprovalRequest, *, colour: bool) -> str:
    action = request.action
    out = [_paint(f"⚠ {action.tool} wants to: {action.summary}", "warn", colour)]
    if request.agent:
        out.append(f"  asked by: {request.agent}")
    payload = action.payload
    if isinstance(payload, FileChange):
        out.append(render_diff(payload.diff or "(no textual diff)", colour=colour))
    elif isinstance(payload, FileChangeSet):
        for change in payload.changes:
            verb = "delete" if change.delete else "create" if change.pre_image_sha256 is None else "change"
            out.append(_paint(f"── {verb} {change.path}", "head", colour))
            out.append(render_diff(change.diff or "(no textual diff)", colour=colour))
    elif isinstance(payload, MemoryAction) and payload.change is not None:
        out.append(render_diff(payload.change.diff or "(no textual diff)", colour=colour))
    elif isinstance(payload, AgentTask):
        out.append(f"  task:    {payload.task}")
        out.append(f"  tools:   {', '.join(payload.tools) or '(none)'}")
        out.append(f"  mode:    {payload.mode}    folder: {payload.workspace}")
    elif isinstance(payload, ShellCommand):
        out.append(f"  command: {payload.command}")
        out.append(f"  folder:  {payload.cwd}")
        if payload.capabilities:
            out.append("  needs:   " + ", ".join(c.value for c in payload.capabilities))
    elif isinstance(payload, McpCall):
        # The summary shortens the arguments; a person approving an MCP call sees all of them (up to a cap).
        arguments = json.dumps(payload.arguments, ensure_ascii=False, indent=2)
        out.append(f"  MCP tool:  {payload.tool} of server {payload.server}")
        out.append("  arguments: " + (arguments if len(arguments) <= 4000 else arguments[:4000] + "…"))
    elif isinstance(payload, McpServerStart):
        what = " ".join([payload.command or "", *payload.args]) if payload.command else payload.url or ""
        out.append(f"  MCP server {payload.server} from the {payload.source} settings: {what}")
        if payload.env_names:
            out.append("  with environment: " + ", ".join(payload.env_names))
    for reason in request.verdict.reasons:
        out.append(f"  why asked: {reason}")
    out.append(f"  digest:  {action.digest[:16]}…")
    out.append("  [y] approve once")
    if request.scopes:
        out.append("  [a] approve for this session: " + "; ".join(s.label for s in request.scopes))
    if request.project_rule:
        out.append(
            f"  [p] approve always in this project: adds {request.project_rule} to your rules for this "
            "project (kept in your Seepient folder, not in the repository)"
        )
    out.append("  [n] reject, and tell the model why")
    out.append(f"  [r] reject for the rest of this session: {request.widest_scope.label}")
    if not request.scopes:
        out.append(f"  (only once: {request.verdict.rule or 'this check'} asks every time)")
    # Everything but the painted lines comes from the model, the workspace or a tool.
    return "\n".join(line if isinstance(line, _Rendered) else shown(line) for line in out)


def _resolve_once(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _read_line(fd: int) -> str | None:
    """One line from ``fd`` without a thread, so Ctrl-C can cancel the wait and nothing is left blocked."""
    loop = asyncio.get_running_loop()
    buf = bytearray()
    while True:
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_reader(fd, _resolve_once, ready)
        try:
            await ready
        finally:
            loop.remove_reader(fd)
        chunk = os.read(fd, 1)
        if not chunk:
            return buf.decode(errors="replace") if buf else None
        if chunk == b"\n":
            return buf.decode(errors="replace")
        buf += chunk


_SCOPE_KEYS = {"exact": "e", "prefix": "c", "directory": "d"}


class TerminalApprover:
    """Asks on ``out`` (stderr) and reads answers from ``input_fd`` (stdin, a terminal)."""

    def __init__(self, *, out: TextIO, input_fd: int = 0, colour: bool | None = None) -> None:
        self._out = out
        self._fd = input_fd
        self._colour = (out.isatty() and "NO_COLOR" not in os.environ) if colour is None else colour

    def _say(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse:
        digest = request.digest
        self._say("\n" + render_request(request, colour=self._colour) + "\n")
        keys = ["y", *(["a"] if request.scopes else []), *(["p"] if request.project_rule else []), "r", "n"]
        while True:
            self._say(f"Approve? [{'/'.join(keys)}]: ")
            answer = await _read_line(self._fd)
            if answer is None:
                return _closed(digest)
            answer = answer.strip().lower()
            if answer in ("y", "yes"):
                return ApprovalResponse(decision=ApprovalDecision.APPROVE_ONCE, digest=digest)
            if answer in ("a", "session") and request.scopes:
                scope = await self._choose_scope(request)
                if scope is None:
                    return _closed(digest)
                return ApprovalResponse(
                    decision=ApprovalDecision.APPROVE_SESSION, digest=digest, scope=scope.kind
                )
            if answer in ("p", "project", "always") and request.project_rule:
                self._say(f"  adding {request.project_rule} to your rules for this project\n")
                return ApprovalResponse(
                    decision=ApprovalDecision.APPROVE_PROJECT, digest=digest, scope=request.project_rule
                )
            if answer in ("r", "refuse"):
                scope = request.widest_scope
                return ApprovalResponse(
                    decision=ApprovalDecision.REJECT_SESSION,
                    digest=digest,
                    scope=scope.kind,
                    feedback=f"refused for the rest of this session: {scope.label}",
                )
            if answer in ("n", "no"):
                self._say("Tell the model why (or what to do instead), then Enter: ")
                feedback = (await _read_line(self._fd) or "").strip()
                return ApprovalResponse(
                    decision=ApprovalDecision.REJECT, digest=digest, feedback=feedback or None
                )
            self._say(f"Please answer {', '.join(keys[:-1])} or {keys[-1]}.\n")

    async def _choose_scope(self, request: ApprovalRequest) -> ApprovalScope | None:
        """The session scope: the only one offered, or the person's pick (Enter takes the exact action)."""
        if len(request.scopes) == 1:
            return request.scopes[0]
        by_key = {_SCOPE_KEYS[s.kind]: s for s in request.scopes}
        lines = ["  For the rest of this session, approve:"]
        for key, scope in by_key.items():
            lines.append(f"    [{key}] {scope.label}" + (" (default)" if scope.kind == "exact" else ""))
        self._say("\n".join(lines) + "\n")
        while True:
            self._say(f"Scope? [{'/'.join(by_key)}]: ")
            answer = await _read_line(self._fd)
            if answer is None:
                return None
            answer = answer.strip().lower()
            if answer == "":
                return by_key["e"]
            if answer in by_key:
                return by_key[answer]
            self._say(f"Please answer {', '.join(by_key)} (or Enter for this exact action).\n")


def _closed(digest: str) -> ApprovalResponse:
    return ApprovalResponse(
        decision=ApprovalDecision.REJECT, digest=digest, feedback="input closed before an answer"
    )
