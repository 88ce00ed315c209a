"""Wiring of the session's MCP servers: which configured servers may start, starting them (each start is an
audited action), and reporting what went wrong as ``error`` events while the session carries on.

Servers from the user's own settings (``~/.seepient/settings.json``, ``--config``, managed settings) start
when the session's first turn begins. A server a *project's* settings define (or change) comes from a
repository someone else may have written: it is configured at all only once the user trusts the project
(``config/project_effect.py``), and even then starting it runs its command on this machine, so it starts
only when the user's own settings list it in ``enabledProjectMcpServers`` (``"*"`` for all) or a person
approves it when asked; ``-y`` does not count as that consent, and a run with no one to ask does not start it
and says so.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from seepient.approval import Approver
from seepient.audit.liveness import current_writer
from seepient.audit.log import AuditLog
from seepient.audit.record import AuditOutcome, AuditRecord, IntentRecord, OutcomeRecord, OutcomeStatus
from seepient.config import Settings
from seepient.config.settings import McpServerSettings
from seepient.protocol import (
    ActionKind,
    ApprovalDecision,
    ApprovalRequest,
    ApprovalResponse,
    ErrorEvent,
    PermissionRequest,
    PermissionResolved,
    PreparedActionDraft,
    Verdict,
    new_id,
)
from seepient.protocol.actions import McpServerStart
from seepient.runtime.events import EventStream
from seepient.tools.mcp.connector import McpConnector
from seepient.tools.mcp.report import McpReport
from seepient.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from seepient.tools.mcp.servers import McpServers

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
        """Start the configured servers once (later calls return at once); problems are reported, not raised."""
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
                    self._record(draft, verdict, approval, "rejected", approval.feedback or "not approved")
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
            # Starting a server runs its command on this machine: each start's intent is durable first.
            intents = {name: self._record_intent(*drafts[name]) for name in allowed}
            before = len(self.reports)
            if allowed:
                await self.servers.start(allowed)
            failed = {r.server: r.message for r in self.reports[before:] if r.code == "mcp_server_failed"}
            for name, intent in intents.items():
                problem = failed.get(name)
                connection = self.servers.connections.get(name)
                tools = len(connection.tools) if connection is not None else 0
                outcome = AuditOutcome(
                    status="error" if problem else "ok",
                    detail=problem or f"started; it offers {tools} tool(s)",
                )
                self._audit.append(OutcomeRecord.for_intent(intent, outcome))
            return self.reports[first:]

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
        intent = IntentRecord(
            surface=self._surface,
            session_id=self._session_id,
            model=self._model_name,
            action=draft,
            verdict=verdict,
            approval=approval,
            workspace=str(self._workspace),
            writer=current_writer(),
        )
        self._audit.append(intent)
        return intent

    def _record(
        self,
        draft: PreparedActionDraft,
        verdict: Verdict,
        approval: ApprovalResponse | None,
        status: OutcomeStatus,
        detail: str,
    ) -> None:
        self._audit.append(
            AuditRecord(
                surface=self._surface,
                session_id=self._session_id,
                model=self._model_name,
                action=draft,
                verdict=verdict,
                approval=approval,
                outcome=AuditOutcome(status=status, detail=detail[:500]),
            )
        )

    def _report(self, report: McpReport) -> None:
        self.reports.append(report)
        self._events.emit(ErrorEvent, turn_id=None, code=report.code, message=report.message)

    async def aclose(self) -> None:
        if self._servers is not None:
            await self._servers.aclose()
