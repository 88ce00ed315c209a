"""The Textual application: a transcript over the session's runtime events, a prompt with completion, slash
commands (built-in and custom), mode toggling, interrupts, and the approval modal. It talks to the runtime
only through ``Session`` and the runtime's functions (doctor, mentions, onboarding).

Over 600 lines: it is the one place every screen element and command meets the session; the parts that stand
alone (completion, usage, widgets, modals, stored sessions) live in their own modules."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, TextArea

from seepient.surfaces.tui.palette import BUILTIN_COMMANDS, CompletionMenu, PromptCompleter, help_text
from seepient.surfaces.tui.reports import session_paths
from seepient.surfaces.tui.usage import UsageMeter
from seepient.surfaces.tui.widgets import (
    Notice,
    PromptInput,
    StatusBar,
    TodoListView,
    ToolCallView,
    TranscriptView,
    UserPrompt,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Sequence
    from pathlib import Path

    from seepient.context.commands import CustomCommand
    from seepient.protocol import ImagePart, Message
    from seepient.runtime import Session, SessionOptions
    from seepient.surfaces.tui.approval import TuiApprover
    from seepient.surfaces.tui.assistant_text import AssistantText
    from seepient.surfaces.tui.sessions import SessionLog

MODES = ("always-ask", "ask-untrusted", "auto", "autonomous-trusted")
# Shift+Tab never lands on autonomous-trusted: a key pressed in passing must not stop every question.
CYCLED_MODES = ("always-ask", "ask-untrusted", "auto")
UNATTENDED_MODE = "autonomous-trusted"
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_RESERVED = frozenset([name[1:] for name in BUILTIN_COMMANDS] + ["exit"])
"""Names a custom command cannot take: a file in a repository must not replace ``/clear`` or ``/quit``."""
_ANSWERS = {
    "approve_once": "approved once",
    "approve_session": "approved for this session",
    "approve_project": "approved always in this project",
    "reject": "rejected",
    "reject_session": "rejected for this session",
}


class SeepientTui(App[int]):
    """Opens the session at construction, so a bad model or setting fails before the screen takes over."""

    TITLE = "seepient"
    CSS = """
    Screen { layout: vertical; }
    #transcript { height: 1fr; padding: 0 1; scrollbar-size-vertical: 1; }
    Footer { height: 1; }
    """
    BINDINGS = [
        Binding("ctrl+c", "interrupt_or_quit", "interrupt / quit", priority=True),
        Binding("shift+tab", "cycle_mode", "cycle consent mode", priority=True),
        Binding("escape", "focus_prompt", "back to the prompt"),
    ]

    def __init__(self, options: SessionOptions | Callable[[], SessionOptions]) -> None:
        """Given ``SessionOptions`` the session opens here (errors raise); given a function returning them,
        it opens in a thread after the first frame, so the prompt is up while the runtime loads, and an
        error ends the app with exit code 2 and ``open_error`` set."""
        super().__init__()
        self.session: Session | None = None
        self.approver: TuiApprover | None = None
        self.open_error: str | None = None
        self._options_factory: Callable[[], SessionOptions] | None = None
        self._queued: str | None = None
        self._log: SessionLog | None = None
        self._log_writes: asyncio.Queue[Awaitable[None]] = asyncio.Queue()
        self._log_writer: asyncio.Task[None] | None = None
        self._grants: list[tuple[str, str]] = []
        """The current session's standing grants (restored and given), carried into a model switch."""
        self._images: list[tuple[str, ImagePart]] = []
        """Images waiting for the next prompt, with the names they are shown by."""
        self._starting: Notice | None = None
        self.turn: asyncio.Task[object] | None = None
        self._turn_started = 0.0
        self._quit_armed = False
        self._text: AssistantText | None = None
        self._calls: dict[str, ToolCallView] = {}
        self.usage = UsageMeter()
        self.commands: dict[str, CustomCommand] = {}
        """Custom slash commands (``context/commands.py``), loaded once the session is open."""
        # Held directly: while the approval modal is the current screen, queries would not find them.
        self._transcript_view = TranscriptView(id="transcript")
        self._menu = CompletionMenu()
        self._prompt = PromptInput()
        self._prompt.menu = self._menu
        self._completer = PromptCompleter(self._menu, self._prompt)
        self._status_bar = StatusBar(id="status")
        self.clock = time.monotonic
        """Where elapsed time comes from; screenshots pin it so the working indicator is stable."""
        if dataclasses.is_dataclass(options):
            self._open(options)  # type: ignore[arg-type]
        else:
            self._options_factory = options  # type: ignore[assignment]

    def _open(self, options: SessionOptions) -> None:
        from seepient.runtime import Session
        from seepient.surfaces.tui.approval import TuiApprover

        approver = TuiApprover()
        approver.attach(self)
        options = dataclasses.replace(options, approver=approver, surface="tui", on_grant=self._grant_given)
        session = Session.open(options)
        session.subscribe(self._on_runtime_event)
        # Here, off the UI's loop, rather than at the first answer's first words.
        importlib.import_module("seepient.surfaces.tui.assistant_text")

        self.options, self.approver, self.session = options, approver, session
        self._grants = list(options.grants)

    def _open_from_factory(self, options: SessionOptions) -> str | None:
        """Runs in a worker thread: the runtime's imports and ``Session.open`` stay off the UI's loop."""
        from seepient.config import SettingsError
        from seepient.models.base import ModelError

        try:
            self._open(options)
        except (SettingsError, ModelError) as exc:
            return str(exc)
        except Exception as exc:  # an unforeseen failure must leave the terminal usable and say what it was
            return f"the session could not open: {type(exc).__name__}: {exc}"
        return None

    async def _open_in_background(self) -> None:
        assert self._options_factory is not None
        try:
            options = await asyncio.to_thread(self._options_factory)
        except Exception as exc:  # as in _open_from_factory: end cleanly, saying what it was
            self.open_error = f"the session could not open: {type(exc).__name__}: {exc}"
            self.exit(2)
            return
        await self._ask_trust(options)
        error = await asyncio.to_thread(self._open_from_factory, options)
        if error is not None:
            self.open_error = error
            self.exit(2)
            return
        self._session_ready()

    async def _ask_trust(self, options: SessionOptions) -> None:
        """The first-use question: when the project's settings hold what only trust applies and the person has
        not trusted them as they are now, show what they would change and trust them only on ``y``. The session
        then reads the file again and checks its hash: a file changed after the question stays untrusted."""
        from seepient.config import SeepientPaths, SettingsError
        from seepient.config.project_effect import TRUST_NOTE
        from seepient.config.settings import has_project_settings, inspect_project
        from seepient.config.trust import TrustStore
        from seepient.surfaces.tui.trust import TrustScreen

        if options.project_trust is not None or not options.workspace.expanduser().is_dir():
            return
        workspace = options.workspace.expanduser().resolve()
        paths = options.paths or SeepientPaths.from_env()
        if not has_project_settings(workspace, paths):
            return
        try:
            report = await asyncio.to_thread(inspect_project, workspace, paths=paths)
        except SettingsError:
            return  # opening the session reports it
        if report.trusted or not report.needs_trust:
            return
        answer: asyncio.Future[bool | None] = asyncio.get_running_loop().create_future()
        self.push_screen(TrustScreen([*report.summary(), TRUST_NOTE]), callback=answer.set_result)
        if await answer:
            try:
                await asyncio.to_thread(TrustStore(paths.trust_store).trust, workspace, report.file.sha256)
            except SettingsError as exc:
                self._notice(str(exc), "red")
                return
            self._notice(f"{workspace} is trusted (`seepient trust --revoke` forgets it)")
        else:
            self._notice("project not trusted: only the settings that make Seepient stricter apply", "yellow")

    # ----- layout -------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield self._transcript_view
        yield self._menu
        yield self._prompt
        yield self._status_bar
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self._prompt.focus()
        # Anchored, the transcript follows new output until the person scrolls up, and again once they are
        # back at the bottom.
        self._transcript_view.anchor()
        self.set_interval(0.25, self._refresh_status)
        if self.session is None:
            self._starting = Notice("starting… · /help for commands")
            self._append(self._starting)
            # Once the first frame is on the screen: the runtime's imports in the opening thread hold the
            # interpreter's lock most of the time, and would hold that frame back.
            self.call_after_refresh(lambda: self.run_worker(self._open_in_background(), group="open"))
        else:
            self._session_ready()
        self._refresh_status()

    def _session_ready(self) -> None:
        assert self.session is not None
        if self._starting is not None:
            self._starting.remove()
            self._starting = None
        context = self.session.context
        for warning in context.warnings if context is not None else ():
            self._notice(f"warning: {warning}", "yellow")
        if self.session.sandbox == "off":
            self._notice("sandbox off: shell commands run unsandboxed on this machine", "yellow")
        if self.options.resumed and self.options.history:
            self._show_stored(self.session.id, self.options.history)
        self._notice(f"workspace {self.session.workspace} · /help for commands")
        self._refresh_status()
        self._log_writer = asyncio.ensure_future(self._write_log())
        self._completer.workspace = self.session.workspace
        self._completer.seepient_home = session_paths(self.options).home
        self.run_worker(self._load_commands(), group="commands")
        if self._queued is not None:
            prompt, self._queued = self._queued, None
            self._start_turn(prompt)

    async def on_unmount(self) -> None:
        if self.turn is not None and not self.turn.done():
            self.turn.cancel()
            await asyncio.gather(self.turn, return_exceptions=True)
        await self._close_log()
        if self.session is not None:
            await self.session.aclose()

    @property
    def working(self) -> bool:
        return self.turn is not None and not self.turn.done()

    def _refresh_status(self) -> None:
        session = self.session
        status = Text()
        if session is None:
            self._status_bar.update(Text("starting…", style="dim"))
            return
        if self.working:
            elapsed = self.clock() - self._turn_started
            spin = _SPINNER[int(elapsed * 4) % len(_SPINNER)]
            status.append(f"{spin} working {int(elapsed)}s ", style="bold yellow")
            status.append("· ", style="dim")
        # Most important first: a narrow terminal cuts the end of the line.
        status.append("mode ", style="dim")
        status.append(session.mode, style="bold magenta" if session.mode == "autonomous-trusted" else "bold")
        status.append(" · sandbox ", style="dim")
        status.append(session.sandbox, style="bold red" if session.sandbox == "off" else "bold green")
        status.append(" · ", style="dim")
        status.append(session.model_spec, style="bold")
        status.append(f" · {self.usage.status()}", style="dim")
        status.append(f" · {session.id}", style="dim")
        self._status_bar.update(status)

    def _transcript(self) -> TranscriptView:
        return self._transcript_view

    def _append(self, widget: object) -> None:
        self._transcript().mount(widget)  # type: ignore[arg-type]

    def _notice(self, text: str, style: str = "") -> None:
        self._append(Notice(text, style))

    # ----- runtime events -----------------------------------------------------------------------------

    def _on_runtime_event(self, event: Any) -> None:
        # Dispatch on the event's ``type`` tag: the UI never needs the protocol's classes imported to start.
        kind = event.type
        if kind in ("turn_started", "turn_completed"):
            self._log_event(event)
        if kind == "turn_started":
            self._text = None
        elif kind == "text_delta":
            if self._text is None:
                from seepient.surfaces.tui.assistant_text import AssistantText

                self._text = AssistantText()
                self._append(self._text)
            self._text.add(event.text)
        elif kind == "tool_call":
            self._end_text()
            view = ToolCallView(event.call)
            self._calls[event.call.id] = view
            self._append(view)
        elif kind == "permission_request":
            # Someone may be looking elsewhere: the terminal's bell (most terminals also flag the window).
            self.bell()
            self.notify("an action is waiting for your approval", title="seepient", timeout=4)
        elif kind == "permission_resolved":
            response = event.response
            how = _ANSWERS[response.decision]
            if response.approved_by != "user":
                how += f" ({response.approved_by})"
            if response.feedback:
                how += f": {response.feedback}"
            self._notice(how, "green" if response.approved else "yellow")
        elif kind == "tool_result":
            view = self._calls.get(event.call_id)
            if view is not None:
                view.finish(event.status, event.output, event.data)
        elif kind == "turn_completed":
            self._end_text()
            self.usage.add(event.usage)
            self._completer.forget_files()
            if event.reason == "interrupted":
                self._notice("interrupted", "yellow")
            elif event.reason == "step_limit":
                self._notice(f"stopped after {event.steps} steps (the step limit)", "yellow")
            self._refresh_status()
        elif kind == "error":
            self._notice(f"error: {event.message}", "red")
        elif kind == "subagent_event":
            self._sub_agent(event)
        elif kind == "compaction":
            note = f"history compacted: ~{event.tokens_before:,} → ~{event.tokens_after:,} tokens"
            self._notice(note + (f" ({event.summary_error})" if event.summary_error else ""))
        elif kind == "todo_updated":
            self._end_text()
            self._append(TodoListView(event.items))

    def _sub_agent(self, event: Any) -> None:
        """A sub-agent's tool activity as one dim line each, tagged with the sub-agent (and its children's)."""
        inner, tag = event.event, f"sub-agent {event.agent_id}"
        while inner.get("type") == "subagent_event":
            inner, tag = inner.get("event", {}), f"{tag} › {inner.get('agent_id')}"
        kind = inner.get("type")
        if kind == "tool_call":
            call = inner.get("call", {})
            self._notice(f"[{tag}] → {call.get('name')} {json.dumps(call.get('arguments') or {})[:120]}")
        elif kind == "tool_result":
            first = (str(inner.get("output", "")).splitlines() or [""])[0][:120]
            self._notice(
                f"[{tag}] {inner.get('status')}: {first}", "" if inner.get("status") == "ok" else "yellow"
            )
        elif kind == "turn_completed":
            self._notice(f"[{tag}] finished ({inner.get('reason')})")

    def _end_text(self) -> None:
        if self._text is not None:
            self._text.finish()
            self._text = None

    # ----- input --------------------------------------------------------------------------------------

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self._quit_armed = False
        self._menu.close()
        text = message.text.strip()
        if text.startswith("/"):
            await self._command(text)
            return
        if self.working:
            self._notice("a turn is still running: wait for it, or Ctrl+C to interrupt it", "yellow")
            return
        if self.session is None:
            if self._queued is not None:
                self._notice("still starting: the first prompt runs as soon as the session is open", "yellow")
                return
            self._queued = message.text
            self._append(UserPrompt(message.text))
            return
        self._send(message.text)

    def _send(
        self, prompt: str, *, plan: bool = False, shown: str | None = None, mentioned: str | None = None
    ) -> None:
        """Start a turn with the prompt, the files its ``@`` words name (of ``mentioned``: what the person
        typed, ``prompt`` by default) and whatever images wait for it (which route it on to vision)."""
        from seepient.runtime.mentions import mentions

        assert self.session is not None
        images = tuple(part for _, part in self._images)
        self._images.clear()
        self._append(UserPrompt(shown or prompt, images=len(images), plan=plan))
        self._transcript_view.anchor()  # what the person just sent is followed, wherever they had scrolled
        paths = mentions(prompt if mentioned is None else mentioned)
        self._start_turn(self._attach_and_run(prompt, paths, images, plan))

    async def _attach_and_run(
        self, prompt: str, paths: list[str], images: tuple[ImagePart, ...], plan: bool
    ) -> object:
        """Each ``@`` file is read through the session (policy, approval, audit), then the turn runs."""
        from seepient.runtime.mentions import NO_SUCH_FILE, attach, read_call, refusal, with_attachments

        session = self.session
        assert session is not None
        found = []
        for path in paths:
            why = refusal(session.workspace, path)
            if why is not None:
                if why != NO_SUCH_FILE:  # an @word that names no file is just a word
                    self._notice(f"@{path} not attached: {why}", "yellow")
                continue
            call = read_call(path)
            self._calls[call.id] = view = ToolCallView(call)
            self._append(view)
            attachment = await attach(session, call)
            if attachment.attached:
                self._notice(f"attached @{path}")
                found.append(attachment)
            else:
                self._notice(f"@{path} not attached: {attachment.text}", "yellow")
        prompt = with_attachments(prompt, found)
        if plan:
            return await self._plan_then_ask(session.run(prompt, images, plan=True))
        return await session.run(prompt, images)

    def _start_turn(self, turn: Awaitable[object] | str) -> None:
        assert self.session is not None
        if isinstance(turn, str):
            turn = self.session.run(turn)
        self._turn_started = self.clock()
        self.turn = asyncio.ensure_future(self._run_turn(turn))
        self._refresh_status()

    async def _plan_then_ask(self, planning: Awaitable[object]) -> object:
        """The planning turn; when it ends with a plan, the plan modal asks whether to carry it out."""
        from seepient.surfaces.tui.plan import PlanApprovalScreen

        outcome = await planning
        if getattr(outcome, "reason", None) == "final":
            self.push_screen(PlanApprovalScreen(getattr(outcome, "text", "")), callback=self._plan_answered)
        return outcome

    def _plan_answered(self, approved: bool | None) -> None:
        if not approved or self.session is None:
            self._notice(
                "plan not carried out; nothing was changed. Say what to change, or /plan again", "yellow"
            )
            return
        self._notice("plan approved: carrying it out", "green")
        self._start_turn(self.session.carry_out_plan())

    def on_prompt_input_images_pasted(self, message: PromptInput.ImagesPasted) -> None:
        for path in message.paths:
            self._attach(path)

    def _attach(self, path: Path) -> None:
        from seepient.surfaces.images import read_image_file

        try:
            part = read_image_file(path)
        except ValueError as exc:
            self._notice(f"image not attached: {path.name}: {exc}", "red")
            return
        self._images.append((path.name, part))
        size = len(part.data or "") * 3 // 4
        self._notice(
            f"image attached: {path.name} ({size // 1024 or 1} KB); it goes with your next prompt "
            f"({len(self._images)} waiting)"
        )

    async def _run_turn(self, turn: Awaitable[object]) -> object:
        from seepient.surfaces.tui.approval import ApprovalScreen

        assert self.session is not None
        try:
            return await turn
        except Exception as exc:  # the screen must survive any failure of a turn
            self._notice(f"the turn failed: {exc}", "red")
            return None
        finally:
            # A question the ended turn asked has no one left to receive its answer.
            while self.screen_stack and isinstance(self.screen_stack[-1], ApprovalScreen):
                self.pop_screen()
            self._refresh_status()

    async def _command(self, line: str) -> None:
        name, _, argument = line.partition(" ")
        argument = argument.strip()
        if name in ("/quit", "/exit"):
            self.exit(0)
        elif name == "/help":
            self._notice(help_text({f"/{n}": c.description for n, c in self.commands.items()}))
        elif self.session is None:
            self._notice("still starting: try again in a moment", "yellow")
        elif name == "/mode":
            if argument:
                self._set_mode(argument)
            else:
                self._notice(f"consent mode: {self.session.mode} (one of {', '.join(MODES)})")
        elif name == "/model":
            await self._switch_model(argument)
        elif name == "/skill":
            self._activate_skill(argument)
        elif name == "/plan":
            if not argument:
                self._notice("usage: /plan WHAT TO DO (the model plans with read-only tools first)", "yellow")
            elif self.working:
                self._notice("a turn is still running: wait for it, or Ctrl+C to interrupt it", "yellow")
            else:
                self._send(argument, plan=True)
        elif name == "/image":
            self._image_command(argument)
        elif name == "/compact":
            if self.working:
                self._notice("wait for the turn to end before compacting", "yellow")
            elif not await self.session.compact():
                self._notice("nothing to compact yet")
        elif name == "/sessions":
            await self._pick_session()
        elif name in ("/clear", "/init") or name[1:] in self.commands:
            if self.working:
                self._notice("a turn is still running: wait for it, or Ctrl+C to interrupt it", "yellow")
            elif name == "/clear":
                await self._clear()
            elif name == "/init":
                from seepient.runtime.onboarding import init_prompt

                self._send(init_prompt(self.session.workspace), shown="/init")
            else:
                command = self.commands[name[1:]]
                self._send(command.prompt(argument), shown=line, mentioned=argument)
        elif name == "/cost":
            self._notice(self.usage.report(self.session))
        elif name in ("/mcp", "/doctor"):
            from seepient.surfaces.tui.reports import doctor_notices, mcp_notices

            self.run_worker(
                self._show(
                    mcp_notices(self.session)
                    if name == "/mcp"
                    else doctor_notices(self.session, self.options)
                ),
                group=name,
            )
        else:
            self._notice(f"unknown command {name}: /help lists the commands", "yellow")

    async def _show(self, notices: AsyncIterator[tuple[str, str]]) -> None:
        async for text, style in notices:
            self._notice(text, style)

    async def _load_commands(self) -> None:
        from seepient.surfaces.tui.reports import load_custom_commands

        assert self.session is not None
        found = await asyncio.to_thread(load_custom_commands, self.session, self.options, _RESERVED)
        self.commands = found.commands
        self._completer.custom = {f"/{n}": f"{c.description} ({c.scope})" for n, c in self.commands.items()}
        for notice in found.notices:
            self._notice(notice, "yellow")

    async def _replace_session(self, options: SessionOptions) -> Session | None:
        """Open a session with ``options`` in place of the current one (which is closed); None, with the reason
        shown, when it cannot open (the current one then stays)."""
        from seepient.config import SettingsError
        from seepient.models.base import ModelError
        from seepient.runtime import Session

        assert self.session is not None
        try:
            session = Session.open(options)
        except (SettingsError, ModelError) as exc:
            self._notice(str(exc), "red")
            return None
        await self.session.aclose()
        self.options, self.session = options, session
        session.subscribe(self._on_runtime_event)
        return session

    async def _clear(self) -> None:
        """A new conversation: a new session id, no history, the transcript and the totals emptied. The old
        conversation stays stored, so ``/sessions`` can bring it back."""
        assert self.session is not None
        options = dataclasses.replace(
            self.options, mode=self.session.mode, session_id=None, history=[], grants=(), resumed=False
        )
        session = await self._replace_session(options)
        if session is None:
            return
        self._grants = []
        self._calls.clear()
        self._text = None
        self.usage = UsageMeter()
        await self._transcript().remove_children()
        self._notice(f"new conversation {session.id} · the previous one is in /sessions")
        self._refresh_status()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area is self._prompt:
            self._completer.update()

    # ----- stored sessions ----------------------------------------------------------------------------

    async def _write_log(self) -> None:
        """Opens the store once the session is up (so startup never waits for it), then writes turn records
        in order. A store that cannot open costs only the ability to resume, and the user is told."""
        from seepient.store import StoreError
        from seepient.surfaces.tui.sessions import SessionLog

        assert self.session is not None
        paths = session_paths(self.options)
        try:
            self._log = await SessionLog.open(paths.home, self.session.workspace)
        except StoreError as exc:
            self._notice(f"sessions are not saved this time: {exc}", "yellow")
            return
        while True:
            write = await self._log_writes.get()
            try:
                await write
            except Exception as exc:  # a lost record must not end the TUI; say so once per failure
                self._notice(f"could not save the session: {exc}", "yellow")
            finally:
                self._log_writes.task_done()

    def _log_event(self, event: Any) -> None:
        session = self.session
        if session is None:
            return
        if event.type == "turn_started":
            write = self._log_start(session, event.turn_id, event.prompt)
        else:
            messages = [m.model_dump(mode="json") for m in session.history]
            write = self._log_end(session.id, event.turn_id, event.reason, event.text, messages)
        self._log_writes.put_nowait(write)

    def _grant_given(self, kind: str, value: str) -> None:
        """``SessionOptions.on_grant``: keep the standing grant (or refusal) for a session that continues this
        one. The broker calls it on the UI's loop, while the session that asked is the current one."""
        session = self.session
        if session is None:
            return
        self._grants.append((kind, value))
        self._log_writes.put_nowait(self._log_grant(session, kind, value))

    async def _log_grant(self, session: Session, kind: str, value: str) -> None:
        if self._log is not None:
            await self._log.ensure_session(session.id, model=session.model_spec, mode=session.mode)
            await self._log.grant_given(session.id, kind, value)

    async def _log_start(self, session: Session, turn_id: str, prompt: str) -> None:
        if self._log is not None:
            await self._log.turn_started(
                session_id=session.id,
                model=session.model_spec,
                mode=session.mode,
                turn_id=turn_id,
                prompt=prompt,
            )

    async def _log_end(self, session_id: str, turn_id: str, reason: str, reply: str, messages: list) -> None:  # type: ignore[type-arg]
        if self._log is not None:
            await self._log.turn_ended(
                session_id=session_id, turn_id=turn_id, reason=reason, reply=reply, messages=messages
            )

    async def _close_log(self) -> None:
        writer = self._log_writer
        if writer is None:
            return
        if self._log is not None and not writer.done():
            await self._log_writes.join()
        writer.cancel()
        await asyncio.gather(writer, return_exceptions=True)
        while not self._log_writes.empty():  # never started: close the coroutines instead of leaking them
            self._log_writes.get_nowait().close()  # type: ignore[attr-defined]
        if self._log is not None:
            await self._log.aclose()
            self._log = None

    async def _pick_session(self) -> None:
        from seepient.surfaces.tui.sessions import SessionPicker

        assert self.session is not None
        if self.working:
            self._notice("wait for the turn to end before switching sessions", "yellow")
            return
        if self._log is None:
            self._notice("the session store is not open (yet): nothing to resume", "yellow")
            return
        await self._log_writes.join()
        stored = await self._log.recent(exclude=self.session.id)
        if not stored:
            self._notice("no other stored session for this workspace")
            return
        self.push_screen(SessionPicker(stored), callback=self._resume_chosen)

    def _resume_chosen(self, session_id: str | None) -> None:
        if session_id:
            self.run_worker(self._resume(session_id), exclusive=True, group="resume")

    async def _resume(self, session_id: str) -> None:
        from seepient.protocol import Message

        assert self.session is not None and self._log is not None
        try:
            stored = await self._log.get(session_id)
            history = [Message.model_validate(m) for m in stored.messages]
        except (KeyError, ValueError) as exc:
            self._notice(f"cannot resume {session_id}: {exc}", "red")
            return
        options = dataclasses.replace(
            self.options,
            mode=self.session.mode,
            session_id=session_id,
            history=history,
            grants=stored.grants,
            resumed=True,
        )
        session = await self._replace_session(options)
        if session is None:
            return
        self._grants = list(stored.grants)
        self._calls.clear()
        self._text = None
        await self._transcript().remove_children()
        self._show_stored(session_id, history)
        self._notice(f"resumed session {session_id} ({len(stored.turns)} turns) with {session.model_spec}")
        self._refresh_status()

    def _show_stored(self, session_id: str, history: Sequence[Message]) -> None:
        """The earlier turns of a continued session, above what comes next."""
        from seepient.surfaces.tui.stored_transcript import stored_transcript

        self._notice(f"earlier in session {session_id}:", "dim")
        for widget in stored_transcript(history):
            self._append(widget)
        self._notice("─" * 20, "dim")

    def _image_command(self, argument: str) -> None:
        from pathlib import Path

        if argument == "clear":
            dropped = len(self._images)
            self._images.clear()
            self._notice(f"{dropped} image(s) dropped")
        elif argument:
            self._attach(Path(argument))
        elif self._images:
            self._notice("waiting for the next prompt: " + ", ".join(name for name, _ in self._images))
        else:
            self._notice("usage: /image PATH (or paste an image file's path); no image is attached")

    def _set_mode(self, mode: str) -> None:
        from seepient.config import SettingsError
        from seepient.config.settings import normalise_mode

        assert self.session is not None
        try:
            canonical = normalise_mode(mode)
        except SettingsError as exc:
            self._notice(str(exc), "red")
            return
        if canonical == UNATTENDED_MODE and self.session.mode != UNATTENDED_MODE:
            from seepient.surfaces.tui.mode_confirm import ConfirmModeScreen

            self.push_screen(ConfirmModeScreen(self.session.mode), self._unattended_answered)
            return
        self._switch_mode(canonical)

    def _unattended_answered(self, confirmed: bool | None) -> None:
        if confirmed:
            self._switch_mode(UNATTENDED_MODE)
        elif self.session is not None:
            self._notice(f"consent mode stays {self.session.mode}")

    def _switch_mode(self, mode: str) -> None:
        from seepient.config import SettingsError

        assert self.session is not None
        try:
            chosen = self.session.set_mode(mode)
        except SettingsError as exc:
            self._notice(str(exc), "red")
            return
        self._notice(f"consent mode: {chosen}")
        self._refresh_status()

    async def _switch_model(self, spec: str) -> None:
        assert self.session is not None and self.approver is not None
        if not spec:
            self._notice(f"model: {self.session.model_spec}")
            return
        if self.working:
            self._notice("wait for the turn to end before switching the model", "yellow")
            return
        old = self.session
        options = dataclasses.replace(
            self.options,
            model=spec,
            mode=old.mode,
            session_id=old.id,
            history=list(old.history),
            grants=tuple(self._grants),
        )
        session = await self._replace_session(options)
        if session is None:
            return
        self._notice(f"model: {session.model_spec}")
        self._refresh_status()

    def _activate_skill(self, name: str) -> None:
        from seepient.config import SettingsError

        assert self.session is not None
        context = self.session.context
        if not name or context is None:
            names = ", ".join(context.skills.names()) if context is not None else ""
            self._notice(f"usage: /skill NAME (available: {names or 'none'})")
            return
        try:
            context.activate(name, "named by the user (/skill)")
        except SettingsError as exc:
            self._notice(str(exc), "red")
            return
        self._notice(f"skill {name} is active for the rest of the session")

    # ----- keys ---------------------------------------------------------------------------------------

    def action_interrupt_or_quit(self) -> None:
        if self.working:
            assert self.turn is not None
            self.turn.cancel()
            self._quit_armed = True
            self._notice("interrupting… (Ctrl+C again to quit)", "yellow")
        elif self._quit_armed:
            self.exit(0)
        else:
            self._quit_armed = True
            self._notice("Ctrl+C again to quit", "yellow")

    def action_focus_prompt(self) -> None:
        """Esc, wherever the focus went (a tool call, the transcript): back to the prompt."""
        self._menu.close()
        self._prompt.focus()

    def action_cycle_mode(self) -> None:
        from seepient.config import SettingsError

        if self.session is None:
            return
        current = CYCLED_MODES.index(self.session.mode) if self.session.mode in CYCLED_MODES else -1
        for step in range(1, len(CYCLED_MODES) + 1):
            candidate = CYCLED_MODES[(current + step) % len(CYCLED_MODES)]
            try:
                self.session.set_mode(candidate)
            except SettingsError:
                continue
            break
        self._refresh_status()
