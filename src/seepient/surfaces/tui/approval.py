"""The approval modal and the approver that shows it: same answers and scopes as the terminal approver
(``y`` once, ``a`` for the session with a scope, ``p`` always for this project, ``n`` with feedback, ``r``
refuse for the session), plus ``Esc`` to reject without feedback."""

from __future__ import annotations

import asyncio
import io
import json
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Input, Static

from seepient.approval.visible import shown
from seepient.protocol import (
    AgentTask,
    ApprovalDecision,
    ApprovalRequest,
    ApprovalResponse,
    ApprovalScope,
    Capability,
    FileChange,
    FileChangeSet,
    ShellCommand,
)
from seepient.protocol.actions import McpCall, McpServerStart, MemoryAction
from seepient.surfaces.tui.diff import render_diff
from seepient.surfaces.tui.yes_no import ReviewFrame

if TYPE_CHECKING:
    from textual.app import App

_SCOPE_KEYS = {"exact": "e", "prefix": "c", "directory": "d"}
_FLAGGED = {
    Capability.NETWORK: "network access",
    Capability.WRITE_OUTSIDE: "writes outside the workspace",
    Capability.DESTRUCTIVE: "destructive",
    Capability.PRIVILEGE: "privilege change",
    Capability.PROCESS_CONTROL: "process control",
    Capability.WRITE_WORKSPACE: "writes in the workspace",
}


def describe_action(request: ApprovalRequest, *, width: int) -> RenderableType:
    """What the person is asked to approve: the diff, or the command with its parts and capabilities."""
    action = request.action
    parts: list[RenderableType] = [
        Text(shown(f"⚠ {action.tool} wants to: {action.summary}"), style="bold yellow")
    ]
    if request.agent:
        parts.append(Text.assemble(("asked by ", "dim"), (shown(request.agent), "bold magenta")))
    payload = action.payload
    if isinstance(payload, FileChange):
        parts.append(Text(shown(payload.path), style="bold"))
        parts.append(render_diff(payload.diff, width=width))
    elif isinstance(payload, FileChangeSet):
        for change in payload.changes:
            verb = "delete" if change.delete else "create" if change.pre_image_sha256 is None else "change"
            parts.append(Text(shown(f"{verb} {change.path}"), style="bold"))
            parts.append(render_diff(change.diff, width=width))
    elif isinstance(payload, MemoryAction) and payload.change is not None:
        parts.append(Text(shown(f"memory: /memories/{payload.scope}/{payload.path}"), style="bold"))
        parts.append(render_diff(payload.change.diff, width=width))
    elif isinstance(payload, AgentTask):
        parts.append(Text.assemble(("task     ", "dim"), (shown(payload.task), "bold")))
        parts.append(Text.assemble(("tools    ", "dim"), shown(", ".join(payload.tools)) or "(none)"))
        parts.append(
            Text.assemble(
                ("mode     ", "dim"), shown(payload.mode), ("  folder ", "dim"), shown(payload.workspace)
            )
        )
    elif isinstance(payload, ShellCommand):
        parts.append(Text.assemble(("command  ", "dim"), (shown(payload.command), "bold")))
        parts.append(Text.assemble(("folder   ", "dim"), shown(payload.cwd)))
        for simple in payload.commands:
            parts.append(Text.assemble(("  • ", "dim"), shown(" ".join(simple.argv))))
        if not payload.parsed:
            parts.append(Text("  the line could not be fully analysed", style="bold red"))
        if payload.capabilities:
            flags = Text("needs    ", style="dim")
            for index, capability in enumerate(payload.capabilities):
                if index:
                    flags.append(", ")
                risky = capability is not Capability.WRITE_WORKSPACE
                flags.append(_FLAGGED.get(capability, capability.value), style="bold red" if risky else "")
            parts.append(flags)
    elif isinstance(payload, McpCall):
        arguments = shown(json.dumps(payload.arguments, ensure_ascii=False, indent=2))
        parts.append(
            Text.assemble(("MCP tool  ", "dim"), (shown(f"{payload.server}:{payload.tool}"), "bold"))
        )
        visible_arguments = arguments if len(arguments) <= 4000 else arguments[:4000] + "…"
        parts.append(Text.assemble(("arguments ", "dim"), visible_arguments))
    elif isinstance(payload, McpServerStart):
        what = " ".join([payload.command or "", *payload.args]) if payload.command else payload.url or ""
        origin = f"MCP server {payload.server} ({payload.source} settings) "
        parts.append(Text.assemble((shown(origin), "dim"), (shown(what), "bold")))
    for reason in request.verdict.reasons:
        parts.append(Text.assemble(("why asked ", "dim"), shown(reason)))
    return Group(*parts)


def _key_help(request: ApprovalRequest) -> str:
    keys = ["[b]y[/] approve once"]
    if request.scopes:
        keys.append("[b]a[/] approve for this session")
    if request.project_rule:
        keys.append(f"[b]p[/] always in this project ({escape(shown(request.project_rule))})")
    keys += [
        "[b]n[/] reject and say why",
        f"[b]r[/] reject for this session ({escape(shown(request.widest_scope.label))})",
        "[b]Esc[/] reject",
    ]
    text = "   ".join(keys)
    if not request.scopes:
        text += f"\n(only once: {escape(shown(request.verdict.rule or 'this check'))} asks every time)"
    return text


class ApprovalScreen(ReviewFrame[ApprovalResponse]):
    """Asks about one action; dismisses with the answer, bound to the action's digest."""

    DEFAULT_CSS = """
    ApprovalScreen #feedback { display: none; }
    ApprovalScreen.feedback #feedback { display: block; }
    """
    BINDINGS = [
        Binding("y", "approve_once", "approve once", show=False),
        Binding("a", "approve_session", "session", show=False),
        Binding("p", "approve_project", "project", show=False),
        Binding("n", "reject_with_feedback", "reject", show=False),
        Binding("r", "reject_session", "refuse for the session", show=False),
        Binding("escape", "reject", "reject", show=False),
    ]

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request
        self._choosing_scope = False
        self.keys_text = _key_help(request)
        """The answers on offer right now (Textual markup)."""

    def compose(self) -> ComposeResult:
        with Vertical():
            with VerticalScroll(id="review"):
                yield Static(id="action")
            yield Static(self.keys_text, id="keys")
            yield Input(placeholder="tell the model why (or what to do instead), then Enter", id="feedback")

    def on_mount(self) -> None:
        self._show_action()

    def on_resize(self) -> None:
        self._show_action()

    def _show_action(self) -> None:
        self.query_one("#action", Static).update(describe_action(self.request, width=self.size.width))

    @property
    def shown_text(self) -> str:
        """The action as plain text, as wide as the screen (what a screen reader or a test sees)."""
        console = Console(width=max(self.size.width, 40), record=True, file=io.StringIO())
        console.print(describe_action(self.request, width=self.size.width))
        return console.export_text()

    def _answer(self, decision: ApprovalDecision, **fields: str | None) -> None:
        self.dismiss(ApprovalResponse(decision=decision, digest=self.request.digest, **fields))

    def action_approve_once(self) -> None:
        if not self._typing:
            self._answer(ApprovalDecision.APPROVE_ONCE)

    def action_approve_session(self) -> None:
        if self._typing or not self.request.scopes:
            return
        if len(self.request.scopes) == 1:
            self._answer_scope(self.request.scopes[0])
            return
        self._choosing_scope = True
        lines = ["For the rest of this session, approve:"]
        for scope in self.request.scopes:
            default = " (Enter)" if scope.kind == "exact" else ""
            lines.append(f"  [b]{_SCOPE_KEYS[scope.kind]}[/] {scope.label}{default}")
        lines.append("  [b]Esc[/] back")
        self.keys_text = "\n".join(lines)
        self.query_one("#keys", Static).update(self.keys_text)

    def action_approve_project(self) -> None:
        if not self._typing and self.request.project_rule:
            self._answer(ApprovalDecision.APPROVE_PROJECT, scope=self.request.project_rule)

    def action_reject_with_feedback(self) -> None:
        if self._typing:
            return
        self.add_class("feedback")
        self.query_one("#feedback", Input).focus()

    def action_reject_session(self) -> None:
        if not self._typing:
            scope = self.request.widest_scope
            self._answer(
                ApprovalDecision.REJECT_SESSION,
                scope=scope.kind,
                feedback=f"refused for the rest of this session: {scope.label}",
            )

    def action_reject(self) -> None:
        if self._choosing_scope:
            self._choosing_scope = False
            self.keys_text = _key_help(self.request)
            self.query_one("#keys", Static).update(self.keys_text)
            return
        self._answer(ApprovalDecision.REJECT)

    @property
    def _typing(self) -> bool:
        return self.has_class("feedback") or self._choosing_scope

    def _answer_scope(self, scope: ApprovalScope) -> None:
        self._answer(ApprovalDecision.APPROVE_SESSION, scope=scope.kind)

    def on_key(self, event: object) -> None:
        if not self._choosing_scope:
            return
        key = getattr(event, "key", "")
        by_key = {_SCOPE_KEYS[s.kind]: s for s in self.request.scopes}
        chosen = by_key.get(key) or (by_key.get("e") if key == "enter" else None)
        if chosen is not None:
            event.stop()  # type: ignore[attr-defined]
            self._answer_scope(chosen)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._answer(ApprovalDecision.REJECT, feedback=event.value.strip() or None)


class TuiApprover:
    """The ``Approver`` a TUI session is opened with: each request shows an ``ApprovalScreen`` and waits."""

    def __init__(self) -> None:
        self._app: App[object] | None = None

    def attach(self, app: App[object]) -> None:
        self._app = app

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse:
        app = self._app
        if app is None:
            return ApprovalResponse(
                decision=ApprovalDecision.REJECT, digest=request.digest, feedback="no one could answer"
            )
        answered: asyncio.Future[ApprovalResponse] = asyncio.get_running_loop().create_future()
        screen = ApprovalScreen(request)

        def _settle(response: ApprovalResponse | None) -> None:
            if not answered.done():
                answered.set_result(
                    response or ApprovalResponse(decision=ApprovalDecision.REJECT, digest=request.digest)
                )

        app.push_screen(screen, callback=_settle)
        try:
            return await answered
        finally:
            # An interrupted turn cancels this wait; the question it asked must not stay on screen.
            if not answered.done() and screen in app.screen_stack:
                app.pop_screen()
