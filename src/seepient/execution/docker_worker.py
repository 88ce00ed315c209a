"""The docker-worker backend: the control plane's ``ActionExecutor`` that sends shell commands and file
commits to the worker scheduler as signed ``WorkerDispatch`` es (carrying the approved action's own draft)
over mutual TLS and believes only results signed by the scheduler's key. This process never opens the Docker
socket and never runs a command.

Fetches, memory and knowledge lookups and web searches stay with the ``local`` executor handed in: the control
plane may read and look things up, it never executes in the workspace (host reads are the local backend's
too). Actions that would execute on the control plane's host (git worktrees, background processes,
multi-file commits) are refused by the handler table with a clear message instead of quietly running here.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import httpx2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import ValidationError

from seepient.audit.log import AuditLog
from seepient.config.settings import ExecutionSettings, SettingsError
from seepient.crypto import (
    CryptoFileError,
    ResultRejected,
    create_dispatch,
    load_signing_key,
    load_verify_key,
    verify_dispatch_result,
)
from seepient.execution.handlers import HandlerTable, refusal, run_handler
from seepient.protocol import (
    Capability,
    DispatchLimits,
    DispatchResult,
    FileChange,
    ShellCommand,
    WorkerDispatch,
    WorkspaceLease,
)
from seepient.protocol.actions import (
    FetchRequest,
    FileChangeSet,
    KnowledgeQuery,
    MemoryAction,
    ProcessControl,
    WebSearchRequest,
    WorktreeCommand,
)
from seepient.protocol.approved import ApprovedAction
from seepient.protocol.executor import ActionExecutor
from seepient.protocol.outcomes import (
    CommitOutcome,
    Outcome,
    SandboxUnavailable,
    ShellOutcome,
    UnsupportedAction,
)

SANDBOX_NAME = "docker-worker"
COMMIT_TIMEOUT_MS = 30_000
LEASE_SLACK = dt.timedelta(minutes=2)
HTTP_SLACK_S = 30.0
"""How much longer than the action's own timeout the control plane waits for the scheduler's answer."""
_NEVER_HERE = "the control plane never executes, and a worker runs one command to its end or one file change per dispatch"


class WorkerUnavailable(SandboxUnavailable):
    """The scheduler refused the dispatch, could not be reached, or could not start a worker; nothing ran."""


class WorkerResultRejected(RuntimeError):
    """The scheduler answered with a result that does not verify; what happened in the worker is unknown."""


def client_ssl_context(ca_cert: Path, client_cert: Path, client_key: Path) -> ssl.SSLContext:
    """Trust only the deployment's CA for the scheduler, and present the control plane's certificate."""
    context = ssl.create_default_context(cafile=str(ca_cert))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(client_cert), str(client_key))
    return context


class DockerWorkerExecutor:
    """Shell commands and file commits through the worker scheduler; every other action as documented above."""

    def __init__(
        self,
        *,
        workspace: Path,
        endpoint: str,
        ssl_context: ssl.SSLContext,
        signing_key: Ed25519PrivateKey,
        result_key: Ed25519PublicKey,
        local: ActionExecutor,
        tenant: str = "default",
        cpus: float = 1.0,
        memory_mb: int = 1024,
        pids: int = 128,
        max_output_bytes: int = 1_000_000,
        session_id: str = "",
        audit: AuditLog | None = None,
    ) -> None:
        self.workspace = workspace.resolve()
        self.endpoint = endpoint.rstrip("/")
        self._ssl_context = ssl_context
        self._signing_key = signing_key
        self._result_key = result_key
        self._local = local
        self.tenant = tenant
        self._limits = {"cpus": cpus, "memory_mb": memory_mb, "pids": pids, "output_bytes": max_output_bytes}
        self.session_id = session_id
        self._audit = audit
        self._client: httpx2.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_settings(
        cls,
        execution: ExecutionSettings,
        *,
        workspace: Path,
        local: ActionExecutor,
        session_id: str = "",
        audit: AuditLog | None = None,
    ) -> DockerWorkerExecutor:
        """Build from the ``execution`` settings of ``control-plane.json``; ``SettingsError`` names what is missing."""
        mtls = execution.mtls
        missing = [
            name
            for name, value in (
                ("schedulerEndpoint", execution.scheduler_endpoint),
                ("mtls.caCertPath", mtls and mtls.ca_cert_path),
                ("mtls.clientCertPath", mtls and mtls.client_cert_path),
                ("mtls.clientKeyPath", mtls and mtls.client_key_path),
                ("dispatchSigningKeyPath", execution.dispatch_signing_key_path),
                ("resultVerifyKeyPath", execution.result_verify_key_path),
            )
            if not value
        ]
        if missing:
            raise SettingsError(
                f'execution.backend "docker-worker" needs execution.{", execution.".join(missing)}; '
                "`seepient certs init DIR` writes a complete control-plane.json"
            )
        assert mtls is not None and execution.scheduler_endpoint is not None
        assert execution.dispatch_signing_key_path and execution.result_verify_key_path
        assert mtls.ca_cert_path and mtls.client_cert_path and mtls.client_key_path
        if not execution.scheduler_endpoint.startswith("https://"):
            raise SettingsError(
                f"execution.schedulerEndpoint must be an https:// URL, got {execution.scheduler_endpoint!r}"
            )
        try:
            context = client_ssl_context(
                Path(mtls.ca_cert_path), Path(mtls.client_cert_path), Path(mtls.client_key_path)
            )
            signing_key = load_signing_key(Path(execution.dispatch_signing_key_path))
            result_key = load_verify_key(Path(execution.result_verify_key_path))
        except CryptoFileError as exc:
            raise SettingsError(f"execution (docker-worker): {exc}") from None
        except (OSError, ssl.SSLError) as exc:
            raise SettingsError(f"execution.mtls: cannot load the certificates: {exc}") from None
        limits = execution.worker_limits
        return cls(
            workspace=workspace,
            endpoint=execution.scheduler_endpoint,
            ssl_context=context,
            signing_key=signing_key,
            result_key=result_key,
            local=local,
            tenant=execution.tenant,
            cpus=limits.cpus,
            memory_mb=limits.memory_mb,
            pids=limits.pids,
            max_output_bytes=execution.max_output_bytes,
            session_id=session_id,
            audit=audit,
        )

    async def execute(self, action: ApprovedAction) -> Outcome:
        return await run_handler(self, self.HANDLERS, action)

    # -- handlers, by payload type ----------------------------------------------------------------------

    async def _shell(self, command: ShellCommand, action: ApprovedAction) -> Outcome:
        if command.background:
            raise UnsupportedAction(
                f"background commands are not available with the docker-worker backend: {_NEVER_HERE}. "
                "Run the command in the foreground instead"
            )
        if Capability.NETWORK in command.capabilities:
            # Workers have no network at all (DESIGN §4, invariant 7). Saying so before dispatch beats a
            # command that fails later with a resolver error the model would try to work around.
            raise SandboxUnavailable(
                "this command needs the network, and in worker mode commands run in containers without "
                "any network; run it where the network is allowed, or do without it"
            )
        result = await self.dispatch(action, command.timeout_ms)
        stderr = result.stderr
        if result.oom_killed:
            stderr += f"\n[the worker ran out of memory ({self._limits['memory_mb']} MB) and was killed]"
        return ShellOutcome(
            exit_code=result.exit_code,
            stdout=result.stdout,
            stderr=stderr,
            timed_out=result.timed_out,
            stdout_truncated=result.output_truncated,
            stderr_truncated=result.output_truncated,
            duration_ms=result.duration_ms,
            sandbox=SANDBOX_NAME,
        )

    async def _commit(self, change: FileChange, action: ApprovedAction) -> Outcome:
        result = await self.dispatch(action, COMMIT_TIMEOUT_MS)
        try:
            return CommitOutcome.model_validate_json(result.stdout)
        except ValidationError:
            why = "timed out" if result.timed_out else f"answered {result.stderr.strip()[:200] or 'nothing'}"
            return CommitOutcome(
                code="ERROR",
                message=f"{change.path}: the worker's commit helper {why}; check the file before retrying",
                path=change.path,
            )

    async def _on_control_plane(self, _payload: object, action: ApprovedAction) -> Outcome:
        return await self._local.execute(action)

    HANDLERS: ClassVar[HandlerTable] = MappingProxyType(
        {
            ShellCommand: _shell,
            FileChange: _commit,
            FetchRequest: _on_control_plane,
            MemoryAction: _on_control_plane,
            KnowledgeQuery: _on_control_plane,
            WebSearchRequest: _on_control_plane,
            FileChangeSet: refusal(
                "changing several files at once is",
                f"{_NEVER_HERE}. Make the changes one file at a time with edit_file and write_file",
                backend="docker-worker",
            ),
            ProcessControl: refusal(
                "background processes are",
                f"{_NEVER_HERE}. Run commands in the foreground with the shell tool",
                backend="docker-worker",
            ),
            WorktreeCommand: refusal(
                "git worktrees are",
                f"{_NEVER_HERE}. Work in the workspace itself",
                backend="docker-worker",
            ),
        }
    )
    """What this backend executes or hands to the local executor, and what it refuses; every other payload is
    refused too (``protocol.executor.NOT_EXECUTED``)."""

    async def dispatch(self, action: ApprovedAction, timeout_ms: int) -> DispatchResult:
        """Sign ``action``'s draft into a fresh dispatch, send it, and return the scheduler's verified result.
        The draft goes as it was approved: its digest is the one in the intent record and the approval."""
        now = dt.datetime.now(dt.UTC)
        lease = WorkspaceLease(
            tenant=self.tenant,
            workspace=str(self.workspace),
            expires_at=now + dt.timedelta(milliseconds=timeout_ms) + LEASE_SLACK,
        )
        limits = DispatchLimits(timeout_ms=timeout_ms, **self._limits)
        dispatch = create_dispatch(
            action.draft, lease=lease, limits=limits, signing_key=self._signing_key, now=now
        )
        try:
            response = await self._http().post(
                f"{self.endpoint}/v1/dispatch",
                content=dispatch.model_dump_json(),
                headers={"content-type": "application/json"},
                timeout=httpx2.Timeout(timeout_ms / 1000 + HTTP_SLACK_S, connect=10.0),
            )
        except httpx2.HTTPError as exc:
            self._record(dispatch, {"status": "unreachable", "detail": str(exc)[:300]})
            raise WorkerUnavailable(
                f"the worker scheduler at {self.endpoint} cannot be reached ({type(exc).__name__}: {exc}); "
                "nothing ran. Check that `seepient scheduler serve` is running and the mTLS files match"
            ) from None
        if response.status_code != 200:
            reason, message = _refusal(response)
            self._record(
                dispatch, {"status": "refused", "http_status": response.status_code, "reason": reason}
            )
            raise WorkerUnavailable(
                f"the worker scheduler refused dispatch {dispatch.dispatch_id} ({response.status_code} {reason}): "
                f"{message}; nothing ran"
            )
        try:
            result = verify_dispatch_result(response.content, verify_key=self._result_key, dispatch=dispatch)
        except ResultRejected as exc:
            self._record(dispatch, {"status": "result_rejected", "detail": str(exc)})
            raise WorkerResultRejected(
                f"the scheduler's answer to dispatch {dispatch.dispatch_id} does not verify ({exc}); "
                "its outcome is unknown"
            ) from None
        self._record(dispatch, _result_summary(result))
        if result.error is not None:
            raise WorkerUnavailable(f"dispatch {dispatch.dispatch_id}: {result.error}")
        return result

    def _http(self) -> httpx2.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            # trust_env=False: no proxy variable may route dispatches (or the client certificate) elsewhere.
            self._client = httpx2.AsyncClient(
                verify=self._ssl_context, trust_env=False, follow_redirects=False
            )
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        await self._local.aclose()

    def _record(self, dispatch: WorkerDispatch, outcome: dict[str, Any]) -> None:
        if self._audit is None:
            return
        self._audit.append(
            {
                "type": "worker_dispatch",
                "timestamp": dt.datetime.now(dt.UTC).isoformat(),
                "session_id": self.session_id,
                "dispatch_id": dispatch.dispatch_id,
                "action_digest": dispatch.action.digest,
                "kind": dispatch.action.kind.value,
                "scheduler": self.endpoint,
                "outcome": outcome,
            }
        )


def _refusal(response: httpx2.Response) -> tuple[str, str]:
    try:
        body = response.json()
        return str(body.get("error", "error")), str(body.get("message", ""))
    except ValueError:
        return "error", response.text[:300]


def _result_summary(result: DispatchResult) -> dict[str, Any]:
    return {
        "status": "error" if result.error else "ran",
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "oom_killed": result.oom_killed,
        "duration_ms": result.duration_ms,
        "container": result.container.model_dump(mode="json") if result.container else None,
        "result_key_id": result.key_id,
        "result_signature": result.signature,
    }
