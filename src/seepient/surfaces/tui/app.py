"""The Textual application: a transcript over the session's runtime events, a prompt, slash commands, mode
toggling, interrupts, and the approval modal. It talks to the runtime only through ``Session``."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll

from seepient.surfaces.tui.widgets import (
    AssistantText,
    Notice,
    PromptInput,
    StatusBar,
    ToolCallView,
    UserPrompt,
)

if TYPE_CHECKING:
    from seepient.runtime import Session, SessionOptions
    from seepient.surfaces.tui.approval import TuiApprover

MODES = ("always-ask", "ask-untrusted", "auto", "autonomous-trusted")
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_HELP = """\
/help              this help
/model [SPEC]      show the model, or switch to PROVIDER:MODEL (the conversation carries over)
/mode [MODE]       show or set the consent mode: always-ask, ask-untrusted, auto, autonomous-trusted
/skill NAME        give the model a skill's full instructions from now on
/compact           shorten the history now (older turns summarised)
/quit              leave
Enter sends · Ctrl+J new line · Up/Down history · Shift+Tab cycles the consent mode
Ctrl+C interrupts the running turn; a second Ctrl+C quits"""
_ANSWERS = {
    "approve_once": "approved once",
    "approve_session": "approved for this session",
    "approve_project": "approved always in this project",
    "reject": "rejected",
}


class SeepientTui(App[int]):
    """Opens the session at construction, so a bad model or setting fails before the screen takes over."""

    TITLE = "seepient"
    CSS = """
    Screen { layout: vertical; }
    #transcript { height: 1fr; padding: 0 1; scrollbar-size-vertical: 1; }
    """
    BINDINGS = [
        Binding("ctrl+c", "interrupt_or_quit", "interrupt / quit", priority=True),
        Binding("shift+tab", "cycle_mode", "cycle consent mode", priority=True),
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
        self._starting: Notice | None = None
        self.turn: asyncio.Task[object] | None = None
        self._turn_started = 0.0
        self._quit_armed = False
        self._text: AssistantText | None = None
        self._calls: dict[str, ToolCallView] = {}
        self._input_tokens = 0
        self._output_tokens = 0
        # Held directly: while the approval modal is the current screen, queries would not find them.
        self._transcript_view = VerticalScroll(id="transcript")
        self._prompt = PromptInput()
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
        options = dataclasses.replace(options, approver=approver, surface="tui")
        session = Session.open(options)
        session.subscribe(self._on_runtime_event)
        self.options, self.approver, self.session = options, approver, session

    def _open_from_factory(self) -> str | None:
        """Runs in a worker thread: the runtime's imports and ``Session.open`` stay off the UI's loop."""
        from seepient.config import SettingsError
        from seepient.models.base import ModelError

        assert self._options_factory is not None
        try:
            self._open(self._options_factory())
        except (SettingsError, ModelError) as exc:
            return str(exc)
        except Exception as exc:  # an unforeseen failure must leave the terminal usable and say what it was
            return f"the session could not open: {type(exc).__name__}: {exc}"
        return None

    async def _open_in_background(self) -> None:
        error = await asyncio.to_thread(self._open_from_factory)
        if error is not None:
            self.open_error = error
            self.exit(2)
            return
        self._session_ready()

    # ----- layout -------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield self._transcript_view
        yield self._prompt
        yield self._status_bar

    def on_mount(self) -> None:
        self._prompt.focus()
        self.set_interval(0.25, self._refresh_status)
        if self.session is None:
            self._starting = Notice("starting… · /help for commands")
            self._append(self._starting)
            self.run_worker(self._open_in_background(), group="open")
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
        self._notice(f"workspace {self.session.workspace} · /help for commands")
        self._refresh_status()
        if self._queued is not None:
            prompt, self._queued = self._queued, None
            self._start_turn(prompt)

    async def on_unmount(self) -> None:
        if self.turn is not None and not self.turn.done():
            self.turn.cancel()
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
        status.append(f" · tokens {self._input_tokens:,} in / {self._output_tokens:,} out", style="dim")
        status.append(f" · {session.id}", style="dim")
        self._status_bar.update(status)

    def _transcript(self) -> VerticalScroll:
        return self._transcript_view

    def _append(self, widget: object) -> None:
        transcript = self._transcript()
        transcript.mount(widget)  # type: ignore[arg-type]
        transcript.scroll_end(animate=False)

    def _notice(self, text: str, style: str = "") -> None:
        self._append(Notice(text, style))

    # ----- runtime events -----------------------------------------------------------------------------

    def _on_runtime_event(self, event: Any) -> None:
        # Dispatch on the event's ``type`` tag: the UI never needs the protocol's classes imported to start.
        kind = event.type
        if kind == "turn_started":
            self._text = None
        elif kind == "text_delta":
            if self._text is None:
                self._text = AssistantText()
                self._append(self._text)
            self._text.add(event.text)
            self._transcript().scroll_end(animate=False)
        elif kind == "tool_call":
            self._end_text()
            view = ToolCallView(event.call)
            self._calls[event.call.id] = view
            self._append(view)
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
                view.finish(event.status, event.output)
        elif kind == "turn_completed":
            self._end_text()
            self._input_tokens += event.usage.input_tokens
            self._output_tokens += event.usage.output_tokens
            if event.reason == "interrupted":
                self._notice("interrupted", "yellow")
            elif event.reason == "step_limit":
                self._notice(f"stopped after {event.steps} steps (the step limit)", "yellow")
            self._refresh_status()
        elif kind == "error":
            self._notice(f"error: {event.message}", "red")
        elif kind == "compaction":
            note = f"history compacted: ~{event.tokens_before:,} → ~{event.tokens_after:,} tokens"
            self._notice(note + (f" ({event.summary_error})" if event.summary_error else ""))

    def _end_text(self) -> None:
        if self._text is not None:
            self._text.finish()
            self._text = None

    # ----- input --------------------------------------------------------------------------------------

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self._quit_armed = False
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
        self._append(UserPrompt(message.text))
        self._start_turn(message.text)

    def _start_turn(self, prompt: str) -> None:
        assert self.session is not None
        self._turn_started = self.clock()
        self.turn = asyncio.ensure_future(self._run_turn(prompt))
        self._refresh_status()

    async def _run_turn(self, prompt: str) -> object:
        from seepient.surfaces.tui.approval import ApprovalScreen

        assert self.session is not None
        try:
            return await self.session.run(prompt)
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
            self._notice(_HELP)
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
        elif name == "/compact":
            if self.working:
                self._notice("wait for the turn to end before compacting", "yellow")
            elif not await self.session.compact():
                self._notice("nothing to compact yet")
        elif name == "/sessions":
            self._notice("/sessions is not available yet: the session store is still being built", "yellow")
        else:
            self._notice(f"unknown command {name}: /help lists the commands", "yellow")

    def _set_mode(self, mode: str) -> None:
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
        from seepient.config import SettingsError
        from seepient.models.base import ModelError
        from seepient.runtime import Session

        assert self.session is not None and self.approver is not None
        if not spec:
            self._notice(f"model: {self.session.model_spec}")
            return
        if self.working:
            self._notice("wait for the turn to end before switching the model", "yellow")
            return
        old = self.session
        options = dataclasses.replace(
            self.options, model=spec, mode=old.mode, session_id=old.id, history=list(old.history)
        )
        try:
            session = Session.open(options)
        except (SettingsError, ModelError) as exc:
            self._notice(str(exc), "red")
            return
        await old.aclose()
        self.options = options
        self.session = session
        session.subscribe(self._on_runtime_event)
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

    def action_cycle_mode(self) -> None:
        from seepient.config import SettingsError

        if self.session is None:
            return
        current = MODES.index(self.session.mode) if self.session.mode in MODES else -1
        for step in range(1, len(MODES) + 1):
            candidate = MODES[(current + step) % len(MODES)]
            try:
                self.session.set_mode(candidate)
            except SettingsError:
                continue
            break
        self._refresh_status()
