"""The ACP agent: ``initialize``, ``session/new`` and ``session/load``, ``session/prompt`` and
``session/cancel``, ``session/set_mode``, each over a ``runtime.Session`` whose events stream back to the
editor as ``session/update`` notifications, in order, before the prompt's answer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from acp import PROTOCOL_VERSION, RequestError, text_block, tool_content, update_agent_message_text
from acp.helpers import update_available_commands, update_user_message_text
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    AvailableCommand,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    ToolCallUpdate,
    UnstructuredCommandInput,
    Usage,
)

from seepient import __version__
from seepient.config import SeepientPaths, SettingsError
from seepient.models.base import ModelError
from seepient.protocol import Message, RuntimeEvent, new_id
from seepient.runtime import Session, SessionOptions
from seepient.runtime.custom_commands import load_custom_commands
from seepient.surfaces.acp.content import PromptError, prompt_parts
from seepient.surfaces.acp.editor_read import EditorReadTool
from seepient.surfaces.acp.permission import EditorApprover
from seepient.surfaces.acp.updates import UpdateTranslator

if TYPE_CHECKING:
    from seepient.context.commands import CustomCommand
    from seepient.surfaces.stored_sessions import SessionLog

_log = logging.getLogger("seepient.acp")

_MODES = {
    "always-ask": ("Always ask", "every action that is not read-only asks first"),
    "ask-untrusted": ("Ask when untrusted", "reads and safe commands run; edits and other commands ask"),
    "auto": ("Auto", "a classifier decides what would ask; what it refuses goes to you"),
    "autonomous-trusted": (
        "Autonomous",
        "the mode asks nothing; denials and checks that always ask still hold",
    ),
}
_STOP_REASONS = {
    "final": "end_turn",
    "step_limit": "max_turn_requests",
    "budget": "max_tokens",
    "interrupted": "cancelled",
}


@dataclass(frozen=True)
class AcpConfig:
    """What ``seepient acp`` was started with; every session the editor opens uses it."""

    model: str | None = None
    mode: str | None = None
    config_file: Path | None = None
    sandbox: Literal["auto", "off"] | None = None
    paths: SeepientPaths | None = None


@dataclass
class _Live:
    session: Session
    options: SessionOptions
    translator: UpdateTranslator
    outbox: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    turn: asyncio.Task[Any] | None = None
    trust_checked: bool = False
    pump: asyncio.Task[None] | None = None
    commands: dict[str, CustomCommand] = field(default_factory=dict)
    """The custom slash commands offered (the user's, and a trusted project's)."""


def _invalid(details: str) -> RequestError:
    return RequestError.invalid_params({"details": details})


def _mcp_settings(servers: list[Any] | None) -> dict[str, dict[str, Any]]:
    """The editor's MCP servers in Seepient's settings shape: they are the user's own configuration."""
    found: dict[str, dict[str, Any]] = {}
    for server in servers or ():
        if server.name in found:
            raise _invalid(f"two MCP servers are named {server.name!r}")
        if isinstance(server, McpServerStdio):
            entry: dict[str, Any] = {"command": server.command, "args": list(server.args)}
            entry["env"] = {variable.name: variable.value for variable in server.env}
        elif isinstance(server, HttpMcpServer):
            entry = {"url": server.url, "headers": {h.name: h.value for h in server.headers}}
        else:
            raise _invalid(f"MCP server {server.name!r}: only stdio and HTTP servers are supported")
        found[server.name] = entry
    return found


class SeepientAgent:
    """One editor connection: the sessions it opened, each with its own event pump."""

    def __init__(self, config: AcpConfig) -> None:
        self._config = config
        self._paths = config.paths or SeepientPaths.from_env()
        self._client: Any = None
        self._initialized = False
        self._reads_buffers = False
        self._sessions: dict[str, _Live] = {}
        self._prompting: set[str] = set()
        self._cancel_asked: set[str] = set()
        self._logs: dict[Path, SessionLog] = {}

    def on_connect(self, conn: Any) -> None:
        self._client = conn

    def _require_initialized(self) -> None:
        if not self._initialized:
            raise RequestError.invalid_request({"details": "call initialize before anything else"})

    def _live(self, session_id: str) -> _Live:
        self._require_initialized()
        live = self._sessions.get(session_id)
        if live is None:
            raise _invalid(f"no open session {session_id!r} (session/new or session/load opens one)")
        return live

    # -- lifecycle ---------------------------------------------------------------------------------------

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, **_: Any
    ) -> InitializeResponse:
        self._initialized = True
        fs = getattr(client_capabilities, "fs", None)
        self._reads_buffers = bool(fs is not None and fs.read_text_file)
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
            ),
            agent_info=Implementation(name="seepient", title="Seepient", version=__version__),
            auth_methods=[],
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> NewSessionResponse:
        self._require_initialized()
        live = await self._open(self._workspace(cwd), _mcp_settings(mcp_servers))
        await self._announce(live)
        return NewSessionResponse(session_id=live.session.id, modes=self._modes(live.session))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> LoadSessionResponse:
        self._require_initialized()
        workspace = self._workspace(cwd)
        log = await self._log(workspace)
        if log is None:
            raise RequestError.internal_error({"details": "the session store could not be opened"})
        try:
            stored, turns = await log.load(session_id)
            history = [Message.model_validate(m) for m in stored]
        except KeyError:
            raise _invalid(f"no stored session {session_id!r}") from None
        except ValueError as exc:
            raise RequestError.internal_error(
                {"details": f"session {session_id} cannot be read: {exc}"}
            ) from None
        old = self._sessions.pop(session_id, None)
        if old is not None:
            await self._close(old)
        live = await self._open(
            workspace, _mcp_settings(mcp_servers), session_id=session_id, history=history, resumed=True
        )
        for turn in turns:
            await self._client.session_update(
                session_id=session_id, update=update_user_message_text(turn.prompt)
            )
            if turn.reply:
                await self._client.session_update(
                    session_id=session_id, update=update_agent_message_text(turn.reply)
                )
        await self._announce(live)
        return LoadSessionResponse(modes=self._modes(live.session))

    def _workspace(self, cwd: str) -> Path:
        path = Path(cwd)
        if not path.is_absolute():
            raise _invalid(f"cwd must be an absolute path, not {cwd!r}")
        if not path.is_dir():
            raise _invalid(f"cwd {cwd!r} is not a folder")
        return path.resolve()

    async def _open(
        self,
        workspace: Path,
        mcp_servers: dict[str, dict[str, Any]],
        *,
        session_id: str | None = None,
        history: list[Message] | None = None,
        resumed: bool = False,
    ) -> _Live:
        config = self._config
        options = SessionOptions(
            workspace=workspace,
            model=config.model,
            mode=config.mode,
            sandbox=config.sandbox,
            config_file=config.config_file,
            approver=EditorApprover(lambda: self._ask_permission, workspace, lambda: self._read_buffer),
            surface="acp",
            paths=config.paths,
            session_id=session_id or new_id("ses"),
            history=list(history or ()),
            resumed=resumed,
            event_history=0,  # every event goes to the editor as it happens; none is asked for again
            settings_overrides={"mcpServers": mcp_servers} if mcp_servers else None,
            extra_tools=[EditorReadTool(lambda: self._read_buffer)] if self._reads_buffers else [],
        )
        return self._attach(await self._open_session(options), options)

    async def _open_session(self, options: SessionOptions) -> Session:
        try:
            return await asyncio.to_thread(Session.open, options)
        except (SettingsError, ModelError) as exc:
            raise _invalid(str(exc)) from None

    def _attach(self, session: Session, options: SessionOptions) -> _Live:
        live = _Live(session=session, options=options, translator=UpdateTranslator(options.workspace))
        session.subscribe(lambda event: self._queue(live, event))
        live.pump = asyncio.get_running_loop().create_task(self._pump(live))
        self._sessions[session.id] = live
        return live

    @property
    def _ask_permission(self) -> Any:
        return None if self._client is None else self._client.request_permission

    @property
    def _read_buffer(self) -> Any:
        return self._client.read_text_file if self._client is not None and self._reads_buffers else None

    def _queue(self, live: _Live, event: RuntimeEvent) -> None:
        for update in live.translator.updates(event):
            live.outbox.put_nowait(update)

    async def _pump(self, live: _Live) -> None:
        """Sends the session's updates one at a time, in the order the events happened."""
        while True:
            update = await live.outbox.get()
            try:
                await self._client.session_update(session_id=live.session.id, update=update)
            except Exception as exc:  # a lost update must not stop the ones after it
                _log.warning("a session update was not delivered: %s", exc)
            finally:
                live.outbox.task_done()

    async def _announce(self, live: _Live) -> None:
        """The slash commands, sent once the editor knows the session (right after this answer): ``/compact``,
        one per skill, and the custom commands (a project's only once the user trusts it; front matter never
        grants anything)."""
        commands = [AvailableCommand(name="compact", description="shorten the history now")]
        context = live.session.context
        skills = list(context.skills.names()) if context is not None else []
        for name in skills:
            commands.append(
                AvailableCommand(
                    name=name,
                    description=f"use the {name} skill for the rest of the session",
                    input=UnstructuredCommandInput(hint="what to do with it"),
                )
            )
        found = await asyncio.to_thread(
            load_custom_commands, live.session, live.options, ["compact", *skills]
        )
        for notice in found.notices:
            _log.warning("%s", notice)
        live.commands = dict(found.commands)
        for command in live.commands.values():
            commands.append(
                AvailableCommand(
                    name=command.name,
                    description=command.description or f"custom command ({command.scope})",
                    input=UnstructuredCommandInput(hint=command.argument_hint or "arguments"),
                )
            )
        live.outbox.put_nowait(update_available_commands(commands))

    def _modes(self, session: Session) -> SessionModeState:
        disabled = set(session.settings.permissions.rule_sources.disabled_modes)
        modes = [
            SessionMode(id=mode, name=name, description=description)
            for mode, (name, description) in _MODES.items()
            if mode not in disabled
        ]
        return SessionModeState(current_mode_id=session.mode, available_modes=modes)

    # -- turns -------------------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        live = self._live(session_id)
        if session_id in self._prompting:
            raise RequestError.invalid_request({"details": "a prompt is already running in this session"})
        try:
            text, images = prompt_parts(prompt)
        except PromptError as exc:
            raise _invalid(str(exc)) from None
        self._prompting.add(session_id)
        self._cancel_asked.discard(session_id)
        try:
            return await self._answer(live, text, images)
        finally:
            self._prompting.discard(session_id)

    async def _answer(self, live: _Live, text: str, images: tuple[Any, ...]) -> PromptResponse:
        if not live.trust_checked:
            live = await self._first_use(live)
        session = live.session
        if session.id in self._cancel_asked:  # cancelled while the trust question was open
            return PromptResponse(stop_reason="cancelled")
        command = self._command(live, text)
        if command is not None:
            live.outbox.put_nowait(update_agent_message_text(await command))
            await live.outbox.join()
            return PromptResponse(stop_reason="end_turn")
        if text.startswith("/"):
            name, _, rest = text[1:].partition(" ")
            custom = live.commands.get(name)
            text = custom.prompt(rest) if custom is not None else self._skill(live, text)
        live.turn = asyncio.get_running_loop().create_task(session.run(text, images))
        try:
            await asyncio.wait({live.turn})
        except asyncio.CancelledError:
            live.turn.cancel()
            raise
        await live.outbox.join()
        if live.turn.cancelled():
            return PromptResponse(stop_reason="cancelled")
        outcome = live.turn.result()
        await self._record(live, outcome, text)
        if outcome.reason == "error":
            raise RequestError.internal_error({"details": outcome.error or "the turn failed"})
        usage = outcome.usage
        # ACP's usage has no room for a count the provider did not send: unknown usage is left out, not 0.
        known = usage.input_tokens is not None and usage.output_tokens is not None
        return PromptResponse(
            stop_reason=_STOP_REASONS.get(outcome.reason, "end_turn"),
            usage=Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                total_tokens=usage.input_tokens + usage.output_tokens,
            )
            if known
            else None,
        )

    def _command(self, live: _Live, text: str) -> Any:
        if text.strip() != "/compact":
            return None

        async def compact() -> str:
            shortened = await live.session.compact()
            return "The history was compacted." if shortened else "Nothing to compact yet."

        return compact()

    def _skill(self, live: _Live, text: str) -> str:
        """``/NAME rest`` for a skill: the skill is activated and ``rest`` is the prompt."""
        name, _, rest = text[1:].partition(" ")
        context = live.session.context
        if context is None or name not in context.skills.names():
            return text
        context.activate(name, f"named by the user (/{name})")
        return rest.strip() or f"Use the {name} skill."

    async def cancel(self, session_id: str, **_: Any) -> None:
        if session_id in self._prompting:
            self._cancel_asked.add(session_id)
        live = self._sessions.get(session_id)
        if live is not None and live.turn is not None and not live.turn.done():
            live.turn.cancel()

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> SetSessionModeResponse:
        live = self._live(session_id)
        try:
            live.session.set_mode(mode_id)
        except SettingsError as exc:
            raise _invalid(str(exc)) from None
        return SetSessionModeResponse()

    # -- trust -------------------------------------------------------------------------------------------

    async def _first_use(self, live: _Live) -> _Live:
        """The first prompt in an untrusted workspace whose settings hold what only trust applies asks the
        person, through the editor, whether to trust them; a yes reopens the session with them applied."""
        from seepient.config.project_effect import TRUST_NOTE
        from seepient.config.settings import has_project_settings, inspect_project
        from seepient.config.trust import TrustStore

        live.trust_checked = True
        workspace, paths = live.options.workspace, self._paths
        if not has_project_settings(workspace, paths):
            return live
        try:
            report = await asyncio.to_thread(inspect_project, workspace, paths=paths)
        except SettingsError:
            return live
        if report.trusted or not report.needs_trust:
            return live
        shown = "\n".join([*report.summary(), TRUST_NOTE])
        ask = self._ask_permission
        if ask is None:
            return live
        try:
            answer = await ask(
                session_id=live.session.id,
                tool_call=ToolCallUpdate(
                    tool_call_id=new_id("trust"),
                    title=f"Trust the project settings of {workspace}?",
                    kind="other",
                    status="pending",
                    content=[tool_content(text_block(shown))],
                ),
                options=[
                    PermissionOption(option_id="trust", name="Trust this project", kind="allow_once"),
                    PermissionOption(option_id="distrust", name="Do not trust it", kind="reject_once"),
                ],
            )
        except (RequestError, ConnectionError) as exc:
            _log.warning("the trust question was not answered: %s", exc)
            return live
        outcome = answer.outcome
        if not (isinstance(outcome, AllowedOutcome) and outcome.option_id == "trust"):
            return live
        await asyncio.to_thread(TrustStore(paths.trust_store).trust, workspace, report.file.sha256)
        options = live.options
        session = await self._open_session(options)
        await self._close(live)
        fresh = self._attach(session, options)
        fresh.trust_checked = True
        await self._announce(fresh)  # now with the trusted project's own commands
        return fresh

    # -- stored sessions and closing ---------------------------------------------------------------------

    async def _log(self, workspace: Path) -> SessionLog | None:
        log = self._logs.get(workspace)
        if log is None:
            # The store (SQLAlchemy, alembic) loads only when a turn is saved or a session loaded.
            from seepient.surfaces.stored_sessions import SessionLog

            try:
                log = await SessionLog.open(self._paths.home, workspace)
            except Exception as exc:  # a store that cannot open costs only session/load
                _log.warning("sessions are not saved: %s", exc)
                return None
            self._logs[workspace] = log
        return log

    async def _record(self, live: _Live, outcome: Any, prompt: str) -> None:
        session = live.session
        log = await self._log(live.options.workspace)
        if log is None:
            return
        try:
            await log.turn_started(
                session_id=session.id,
                model=session.model_spec,
                mode=session.mode,
                turn_id=outcome.turn_id,
                prompt=prompt,
            )
            await log.turn_ended(
                session_id=session.id,
                turn_id=outcome.turn_id,
                reason=outcome.reason,
                reply=outcome.text,
                messages=[m.model_dump(mode="json") for m in session.history],
            )
        except Exception as exc:
            _log.warning("the turn was not saved: %s", exc)

    async def _close(self, live: _Live) -> None:
        if live.turn is not None and not live.turn.done():
            live.turn.cancel()
            await asyncio.gather(live.turn, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(live.outbox.join(), timeout=5)
        if live.pump is not None:
            live.pump.cancel()
            await asyncio.gather(live.pump, return_exceptions=True)
        self._sessions.pop(live.session.id, None)
        await live.session.aclose()

    async def aclose(self) -> None:
        for live in list(self._sessions.values()):
            await self._close(live)
        for log in self._logs.values():
            await log.aclose()
        self._logs.clear()
