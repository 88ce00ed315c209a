"""The Textual application: a transcript over the session's runtime events, a prompt, slash commands, mode
toggling, interrupts, and the approval modal. It talks to the runtime only through ``Session``."""

from __future__ import annotations

import asyncio
import dataclasses
import json
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
    TodoListView,
    ToolCallView,
    UserPrompt,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable
    from pathlib import Path

    from seepient.protocol import ImagePart
    from seepient.runtime import Session, SessionOptions
    from seepient.surfaces.tui.approval import TuiApprover
    from seepient.surfaces.tui.sessions import SessionLog

MODES = ("always-ask", "ask-untrusted", "auto", "autonomous-trusted")
# Shift+Tab never lands on autonomous-trusted: a key pressed in passing must not stop every question.
CYCLED_MODES = ("always-ask", "ask-untrusted", "auto")
UNATTENDED_MODE = "autonomous-trusted"
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_HELP = """\
/help              this help
/model [SPEC]      show the model, or switch to PROVIDER:MODEL (the conversation carries over)
/mode [MODE]       show or set the consent mode: always-ask, ask-untrusted, auto, autonomous-trusted (asks first)
/skill NAME        give the model a skill's full instructions from now on
/plan PROMPT       plan first with read-only tools; the plan is carried out only once you approve it
/image [PATH]      attach an image to the next prompt (or paste/drop the file); /image clear drops them
/compact           shorten the history now (older turns summarised)
/sessions          pick one of this workspace's stored sessions and resume it
/quit              leave
Enter sends · Ctrl+J new line · pasting an image file's path attaches it · Up/Down history · Shift+Tab cycles always-ask, ask-untrusted, auto
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
        self._log: SessionLog | None = None
        self._log_writes: asyncio.Queue[Awaitable[None]] = asyncio.Queue()
        self._log_writer: asyncio.Task[None] | None = None
        self._images: list[tuple[str, ImagePart]] = []
        """Images waiting for the next prompt, with the names they are shown by."""
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
        self._log_writer = asyncio.ensure_future(self._write_log())
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
        if kind in ("turn_started", "turn_completed"):
            self._log_event(event)
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

    def _send(self, prompt: str, *, plan: bool = False) -> None:
        """Start a turn with the prompt and whatever images wait for it (which route it on to vision)."""
        assert self.session is not None
        images = tuple(part for _, part in self._images)
        self._images.clear()
        self._append(UserPrompt(prompt, images=len(images), plan=plan))
        session = self.session
        if plan:
            self._start_turn(self._plan_then_ask(session.run(prompt, images, plan=True)))
        else:
            self._start_turn(session.run(prompt, images))

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
        else:
            self._notice(f"unknown command {name}: /help lists the commands", "yellow")

    # ----- stored sessions ----------------------------------------------------------------------------

    async def _write_log(self) -> None:
        """Opens the store once the session is up (so startup never waits for it), then writes turn records
        in order. A store that cannot open costs only the ability to resume, and the user is told."""
        from seepient.config import SeepientPaths
        from seepient.store import StoreError
        from seepient.surfaces.tui.sessions import SessionLog

        assert self.session is not None
        paths = self.options.paths or SeepientPaths.from_env(
            dict(self.options.environ) if self.options.environ else None
        )
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
        from seepient.config import SettingsError
        from seepient.models.base import ModelError
        from seepient.protocol import Message
        from seepient.runtime import Session

        assert self.session is not None and self._log is not None
        try:
            stored, turns = await self._log.load(session_id)
            history = [Message.model_validate(m) for m in stored]
        except (KeyError, ValueError) as exc:
            self._notice(f"cannot resume {session_id}: {exc}", "red")
            return
        old = self.session
        options = dataclasses.replace(
            self.options, mode=old.mode, session_id=session_id, history=history, resumed=True
        )
        try:
            session = Session.open(options)
        except (SettingsError, ModelError) as exc:
            self._notice(str(exc), "red")
            return
        await old.aclose()
        self.options, self.session = options, session
        session.subscribe(self._on_runtime_event)
        self._calls.clear()
        self._text = None
        await self._transcript().remove_children()
        for turn in turns:
            self._append(UserPrompt(turn.prompt))
            if turn.reply:
                self._append(AssistantText(turn.reply))
        self._notice(f"resumed session {session_id} ({len(turns)} turns) with {session.model_spec}")
        self._refresh_status()

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
        current = CYCLED_MODES.index(self.session.mode) if self.session.mode in CYCLED_MODES else -1
        for step in range(1, len(CYCLED_MODES) + 1):
            candidate = CYCLED_MODES[(current + step) % len(CYCLED_MODES)]
            try:
                self.session.set_mode(candidate)
            except SettingsError:
                continue
            break
        self._refresh_status()
