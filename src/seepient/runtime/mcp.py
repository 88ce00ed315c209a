"""Wiring of the session's MCP servers: which configured servers may start, starting them (each start is an
audited action), and reporting what went wrong as ``error`` events while the session carries on.

Servers from the user's own settings (``~/.seepient/settings.json``, ``--config``, managed settings) start
when the session's first turn begins, in the background, once the turn's first model request is under way:
the first request offers the tools of the servers ready by then (none: the SDK alone takes about a second to
import), and a call to a tool of a server still starting waits for the start. A server a *project's* settings define (or change) comes from a
repository someone else may have written: it is configured at all only once the user trusts the project
(``config/project_effect.py``), and even then starting it runs its command on this machine, so it starts
only when the user's own settings list it in ``enabledProjectMcpServers`` (``"*"`` for all) or a person
approves it when asked; ``-y`` does not count as that consent, and a run with no one to ask does not start it
and says so.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from seepient.approval import Approver
from seepient.audit.action_records import ActionRecords
from seepient.audit.log import AuditLog
from seepient.audit.record import AuditOutcome, IntentRecord, OutcomeRecord
from seepient.config import Settings
from seepient.config.sections import McpServerSettings
from seepient.protocol import (
    ActionKind,
    ApprovalDecision,
    ApprovalRequest,
    ApprovalResponse,
    ErrorEvent,
    PermissionRequest,
    PermissionResolved,
    PreparedActionDraft,
    ReasoningDelta,
    RuntimeEvent,
    TextDelta,
    ToolCallEvent,
    TurnCompleted,
    Verdict,
    new_id,
)
from seepient.protocol.actions import McpServerStart
from seepient.protocol.errors import AuditError
from seepient.runtime.events import EventStream
from seepient.tools.mcp.connector import McpConnector
from seepient.tools.mcp.report import McpReport
from seepient.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from seepient.tools.mcp.servers import McpServers


async def _in_daemon_thread(work: Callable[[], None]) -> None:
    """``work`` in a daemon thread of its own, not the loop's executor: an import abandoned by a closing session
    then holds up neither its exit (the CLI leaves with ``os._exit``) nor the interpreter's shutdown."""
    done: concurrent.futures.Future[None] = concurrent.futures.Future()

    def _run() -> None:
        done.set_running_or_notify_cancel()  # from here on no one can cancel it, so setting it cannot fail
        try:
            work()
        except BaseException as exc:  # handed to the waiting task, as asyncio.to_thread would
            done.set_exception(exc)
        else:
            done.set_result(None)

    threading.Thread(target=_run, name="mcp-sdk-import", daemon=True).start()
    await asyncio.wrap_future(done)


def _load_mcp_sdk() -> None:
    import seepient.execution.mcp_links  # noqa: F401  (the SDK's client transports)
    import seepient.tools.mcp.servers  # noqa: F401  (the SDK's client session and types)


# The importing thread holds the GIL most of the time, so importing the SDK while the turn builds and sends its
# first request delays that request (by a fifth of a second here). The start waits for the model's first
# answer event, the sign the request is out, or this long at most (a model slow to answer, a turn that errs).
_START_AFTER_REQUEST_S = 0.5
_ANSWER_EVENTS = (TextDelta, ReasoningDelta, ToolCallEvent, TurnCompleted, ErrorEvent)

RULE_USER_SERVER = "mcp:user_server"
RULE_PROJECT_TRUSTED = "mcp:project_server_enabled"
RULE_PROJECT_SERVER = "mcp:project_server"
_START_TOOL = "mcp_server_start"


class SessionMcp:
    """The MCP side of one session."""

    def __init__(
        self,
        *,
        settings: Settings,
        workspace: Path,
        registry: ToolRegistry,
        connector: McpConnector,
        events: EventStream,
        audit: AuditLog,
        approver: Approver | None,
        session_id: str,
        model_name: str,
        surface: str,
    ) -> None:
        self._configured = {n: s for n, s in settings.mcp_servers.items() if not s.disabled}
        self._enabled_project = frozenset(settings.enabled_project_mcp_servers)
        # The servers the loaded project settings define: the file itself is not read again, so what was
        # judged (and trusted, by its hash) is what counts.
        self._project = settings.project.mcp_servers if settings.project is not None else frozenset()
        self._workspace = workspace
        self._events = events
        self._audit = audit
        self._approver = approver
        self._session_id = session_id
        self._model_name = model_name
        self._surface = surface
        self._registry = registry
        self._connector = connector
        self._lock = asyncio.Lock()
        self._started = False
        self._launch: asyncio.Task[None] | None = None
        self._launching: frozenset[str] = frozenset()
        self._request_out = asyncio.Event()
        # Set once the background start runs server commands: from then on closing waits for it.
        self._spawning = False
        self._servers: McpServers | None = None
        self.reports: list[McpReport] = []

    @property
    def servers(self) -> McpServers:
        """The connections and the tools they registered, made when first needed: building them loads the MCP
        SDK, which takes about a second and which a session without servers never needs."""
        if self._servers is None:
            from seepient.tools.mcp.servers import McpServers

            self._servers = McpServers(self._registry, self._connector, report=self._report)
        return self._servers

    @property
    def configured(self) -> dict[str, McpServerSettings]:
        return dict(self._configured)

    async def start(self) -> list[McpReport]:
        """Decide which configured servers start (asking where consent is needed) and record their intents,
        once; the servers then start in the background (``ready`` waits for them). Problems are reported, not
        raised; what is returned is what was reported before the background start."""
        async with self._lock:
            if self._started:
                return []
            self._started = True
            first = len(self.reports)
            allowed: dict[str, McpServerSettings] = {}
            drafts: dict[str, tuple[PreparedActionDraft, Verdict, ApprovalResponse | None]] = {}
            for name, server in self._configured.items():
                draft = self._start_draft(name, server)
                verdict, approval = await self._consent(name, draft)
                if approval is not None and not approval.approved:
                    self._record_rejected(draft, verdict, approval)
                    self._report(
                        McpReport(
                            name,
                            "mcp_server_not_started",
                            f"MCP server {name} from the project settings was not started: "
                            f"{approval.feedback or 'not approved'}",
                        )
                    )
                    continue
                allowed[name] = server
                drafts[name] = (draft, verdict, approval)
            if allowed:
                self._launching = frozenset(allowed)
                unsubscribe = self._events.subscribe(self._note_answer)
                self._launch = asyncio.create_task(
                    self._start_servers(allowed, drafts, unsubscribe), name="mcp-start"
                )
            return self.reports[first:]

    async def ready(self) -> None:
        """Wait until the servers started in the background are up (or have failed, which is reported)."""
        self._request_out.set()  # someone waits for the servers: no model request to keep clear of
        if self._launch is not None:
            await asyncio.shield(self._launch)

    async def await_tool(self, name: str) -> None:
        """Called for a tool name the registry does not know: if it may belong to a server still starting
        (``mcp__<server>__…``), wait for the start so the call finds the tool rather than failing as unknown."""
        if self._launch is None or self._launch.done():
            return
        if any(name.startswith(f"mcp__{server}__") for server in self._launching):
            await self.ready()

    def _note_answer(self, event: RuntimeEvent) -> None:
        if isinstance(event, _ANSWER_EVENTS):
            self._request_out.set()

    async def _start_servers(
        self,
        allowed: dict[str, McpServerSettings],
        drafts: dict[str, tuple[PreparedActionDraft, Verdict, ApprovalResponse | None]],
        unsubscribe: Callable[[], None],
    ) -> None:
        before = len(self.reports)
        intents: dict[str, IntentRecord] = {}
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_START_AFTER_REQUEST_S):
                    await self._request_out.wait()
            # The MCP SDK takes about a second to import; in the loop's thread that second would hold up the
            # model request the background start exists not to delay.
            await _in_daemon_thread(_load_mcp_sdk)
            # Starting a server runs its command on this machine: each start's intent is durable first. Written
            # here, once the model request is out, not before it: the session's first signed record loads the
            # signing key (and the crypto library), tens of ms the request would otherwise wait for. Until this
            # point a closing session cancels the start, and nothing was recorded or run.
            self._spawning = True
            try:
                for name in allowed:
                    intents[name] = self._record_intent(*drafts[name])
            except AuditError as exc:
                for name in allowed:
                    message = f"MCP server {name} was not started: the audit log refused its record ({exc})"
                    self._report(McpReport(name, "mcp_server_failed", message))
                return
            await self.servers.start(allowed)
        finally:
            unsubscribe()
            failed = {r.server: r.message for r in self.reports[before:] if r.code == "mcp_server_failed"}
            for name, intent in intents.items():
                problem = failed.get(name)
                connection = self.servers.connections.get(name)
                tools = len(connection.tools) if connection is not None else 0
                if problem is None and connection is None:
                    problem = "the session ended before the server started"
                outcome = AuditOutcome(
                    status="error" if problem else "ok",
                    detail=problem or f"started; it offers {tools} tool(s)",
                )
                self._audit.append(OutcomeRecord.for_intent(intent, outcome))

    def _source(self, name: str) -> Literal["user", "project"]:
        return "project" if name in self._project else "user"

    def _start_draft(self, name: str, server: McpServerSettings) -> PreparedActionDraft:
        payload = McpServerStart(
            server=name,
            transport=server.transport,
            source=self._source(name),
            command=server.command,
            args=tuple(server.args),
            cwd=server.cwd,
            env_names=tuple(sorted(server.env)),
            url=server.url,
        )
        what = " ".join([server.command or "", *server.args]).strip() if server.command else server.url
        return PreparedActionDraft(
            session_id=self._session_id,
            call_id=new_id("mcp"),
            tool=_START_TOOL,
            kind=ActionKind.MCP,
            payload=payload,
            read_only=False,
            summary=f"Start MCP server {name} ({payload.source} settings): {what}",
        )

    async def _consent(
        self, name: str, draft: PreparedActionDraft
    ) -> tuple[Verdict, ApprovalResponse | None]:
        if self._source(name) == "user":
            return Verdict.allow(RULE_USER_SERVER, "the user's own settings configure this server"), None
        if name in self._enabled_project or "*" in self._enabled_project:
            return (
                Verdict.allow(
                    RULE_PROJECT_TRUSTED, "the user's settings list it in enabledProjectMcpServers"
                ),
                None,
            )
        verdict = Verdict.ask(
            RULE_PROJECT_SERVER,
            f"the project's settings configure MCP server {name}; starting it runs its command on this machine",
        )
        if self._approver is None:
            refusal = ApprovalResponse(
                decision=ApprovalDecision.REJECT,
                digest=draft.digest,
                feedback=(
                    "a project's MCP servers start only with the user's consent and no one can be asked here; "
                    f'add "{name}" to enabledProjectMcpServers in the user settings to start it'
                ),
                approved_by="headless",
            )
            return verdict, refusal
        request = ApprovalRequest(session_id=self._session_id, action=draft, verdict=verdict)
        turn_id = draft.call_id
        self._events.emit(PermissionRequest, turn_id=turn_id, request=request)
        response = await self._approver.decide(request)
        if response.digest != draft.digest:
            response = ApprovalResponse(
                decision=ApprovalDecision.REJECT,
                digest=draft.digest,
                feedback="the approval answered a different action",
                approved_by="broker:digest_mismatch",
            )
        self._events.emit(
            PermissionResolved, turn_id=turn_id, request_id=request.request_id, response=response
        )
        return verdict, response

    def _record_intent(
        self, draft: PreparedActionDraft, verdict: Verdict, approval: ApprovalResponse | None
    ) -> IntentRecord:
        intent = self._records().intent(draft, verdict, approval, workspace=str(self._workspace))
        self._audit.append(intent)
        return intent

    def _record_rejected(
        self, draft: PreparedActionDraft, verdict: Verdict, approval: ApprovalResponse
    ) -> None:
        """The one record of a start the person did not approve."""
        outcome = AuditOutcome(status="rejected", detail=(approval.feedback or "not approved")[:500])
        self._audit.append(self._records().not_run(draft, verdict, approval, outcome))

    def _records(self) -> ActionRecords:
        return ActionRecords(self._surface, self._session_id, self._model_name)

    def _report(self, report: McpReport) -> None:
        self.reports.append(report)
        self._events.emit(ErrorEvent, turn_id=None, code=report.code, message=report.message)

    async def aclose(self) -> None:
        self._request_out.set()
        if self._launch is not None and not self._launch.done():
            if not self._spawning:
                # Nothing run yet (the start still waits for the model's request or the SDK's import): a session
                # that ends first, as a one-shot run whose model never needed the servers, does not start them.
                self._launch.cancel()
            # A start that runs server commands is waited for, not cancelled mid-handshake: its processes are
            # then known and closed below, and its audit outcomes are written.
            await asyncio.wait([self._launch])
        if self._servers is not None:
            await self._servers.aclose()
