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
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import httpx2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import ValidationError

from seepient import telemetry
from seepient.audit.log import AuditLog
from seepient.config.sections import ExecutionSettings, WorkerLimitSettings
from seepient.config.settings import SettingsError
from seepient.crypto import (
    CryptoFileError,
    ResultRejected,
    create_dispatch,
    load_signing_key,
    load_verify_key,
    verify_dispatch_result,
)
from seepient.execution.handlers import HandlerTable, refusal, run_handler
from seepient.execution.worker_hosts import WorkerHost, WorkerHosts, shared_hosts
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
from seepient.protocol.errors import ExecutionError, RefusalError
from seepient.protocol.executor import ActionExecutor
from seepient.protocol.outcomes import CommitOutcome, Outcome, ShellOutcome
from seepient.protocol.refusals import OutcomeUnknown, SandboxUnavailable, UnsupportedAction

SANDBOX_NAME = "docker-worker"
COMMIT_TIMEOUT_MS = 30_000
LEASE_SLACK = dt.timedelta(minutes=2)
HTTP_SLACK_S = 30.0
"""How much longer than the action's own timeout the control plane waits for the scheduler's answer."""
_NEVER_HERE = "the control plane never executes, and a worker runs one command to its end or one file change per dispatch"


class WorkerUnavailable(SandboxUnavailable):
    """The scheduler refused the dispatch, could not be reached, or could not start a worker; nothing ran."""


class WorkerResultRejected(RefusalError, RuntimeError):
    """The scheduler answered with a result that does not verify; what happened in the worker is unknown."""


class WorkerInterrupted(OutcomeUnknown):
    """The dispatch was sent and its scheduler stopped answering: it may have run, so it is never retried."""


class _NeverSent(ExecutionError):
    """The scheduler could not be reached before any byte of the dispatch left: safe to try another."""


def client_ssl_context(ca_cert: Path, client_cert: Path, client_key: Path) -> ssl.SSLContext:
    """Trust only the deployment's CA for the scheduler, and present the control plane's certificate."""
    context = ssl.create_default_context(cafile=str(ca_cert))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(client_cert), str(client_key))
    return context


class DockerWorkerExecutor:
    """Shell commands and file commits through the worker scheduler; every other action as documented above."""

    execution_backend = "worker"

    def __init__(
        self,
        *,
        workspace: Path,
        endpoint: str | None = None,
        hosts: WorkerHosts | None = None,
        ssl_context: ssl.SSLContext,
        signing_key: Ed25519PrivateKey,
        result_key: Ed25519PublicKey,
        local: ActionExecutor,
        tenant: str = "default",
        limits: WorkerLimitSettings | None = None,
        max_output_bytes: int = 1_000_000,
        session_id: str = "",
        audit: AuditLog | None = None,
    ) -> None:
        self.workspace = workspace.resolve()
        if hosts is None:
            if endpoint is None:
                raise ValueError("give the scheduler endpoint or the worker hosts")
            hosts = WorkerHosts((WorkerHost(endpoint.rstrip("/"), tenant),))
        self.hosts = hosts
        self._ssl_context = ssl_context
        self._signing_key = signing_key
        self._result_key = result_key
        self._local = local
        self.tenant = tenant
        limits = limits or WorkerLimitSettings()
        self._limits = dict(
            limits.model_dump(include={"cpus", "memory_mb", "pids"}), output_bytes=max_output_bytes
        )
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
                ("schedulerEndpoint", execution.scheduler_endpoint or execution.scheduler_endpoints),
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
        assert mtls is not None
        assert execution.dispatch_signing_key_path and execution.result_verify_key_path
        assert mtls.ca_cert_path and mtls.client_cert_path and mtls.client_key_path
        hosts = _hosts_from(execution)
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
        breaker = execution.scheduler_breaker
        return cls(
            workspace=workspace,
            hosts=shared_hosts(
                hosts, failure_threshold=breaker.failure_threshold, cooldown_s=breaker.cooldown_ms / 1000
            ),
            ssl_context=context,
            signing_key=signing_key,
            result_key=result_key,
            local=local,
            tenant=execution.tenant,
            limits=execution.worker_limits,
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

    @property
    def endpoint(self) -> str:
        """The first scheduler configured (the only one, unless several are)."""
        return self.hosts.hosts[0].url

    async def dispatch(self, action: ApprovedAction, timeout_ms: int) -> DispatchResult:
        """Sign ``action``'s draft into a fresh dispatch for a scheduler that can be reached, send it, and
        return that scheduler's verified result. The draft goes as it was approved: its digest is the one in
        the intent record and the approval. Another scheduler is tried only while nothing was sent."""
        skipped: list[str] = []
        for host in self.hosts.candidates():
            if self.hosts.needs_check(host) and not await self._healthy(host):
                skipped.append(f"{host.url}: {self.hosts.last_error(host)}")
                continue
            dispatch = self._signed(action, host, timeout_ms)
            attributes = {"seepient.worker.dispatch_id": dispatch.dispatch_id, "server.address": host.url}
            started = time.monotonic()
            with telemetry.span("seepient.worker.dispatch", attributes), self.hosts.using(host):
                try:
                    result = await self._send(host, dispatch, timeout_ms)
                except _NeverSent as exc:
                    self.hosts.unreachable(host, str(exc))
                    telemetry.metrics.failover(host.url)
                    skipped.append(f"{host.url}: {exc}")
                    continue
                finally:
                    self._note_host(host)
            telemetry.metrics.dispatch("control_plane", "ran", time.monotonic() - started)
            return result
        if not skipped:
            skipped = [
                f"{host.url}: {self.hosts.last_error(host) or 'set aside'}" for host in self.hosts.hosts
            ]
        telemetry.metrics.dispatch_refused("control_plane", "unreachable")
        several = "s" if len(self.hosts.hosts) > 1 else ""
        raise WorkerUnavailable(
            f"the worker scheduler{several} cannot be reached ({'; '.join(skipped)}); nothing ran. Check that "
            "`seepient scheduler serve` is running and the mTLS files match"
        )

    def _signed(self, action: ApprovedAction, host: WorkerHost, timeout_ms: int) -> WorkerDispatch:
        now = dt.datetime.now(dt.UTC)
        lease = WorkspaceLease(
            tenant=host.tenant,
            workspace=str(self.workspace),
            expires_at=now + dt.timedelta(milliseconds=timeout_ms) + LEASE_SLACK,
        )
        limits = DispatchLimits(timeout_ms=timeout_ms, **self._limits)
        return create_dispatch(
            action.draft, lease=lease, limits=limits, signing_key=self._signing_key, now=now
        )

    async def _healthy(self, host: WorkerHost) -> bool:
        """``GET /v1/health`` on ``host``: only an ``ok`` answer counts (a scheduler without Docker is not)."""
        try:
            response = await self._http().get(f"{host.url}/v1/health", timeout=httpx2.Timeout(5.0))
            healthy = response.status_code == 200
            why = f"health check answered {response.status_code}"
        except httpx2.HTTPError as exc:
            healthy, why = False, f"health check failed ({type(exc).__name__}: {exc})"
        if healthy:
            self.hosts.reached(host)
        else:
            self.hosts.unreachable(host, why)
        self._note_host(host)
        return healthy

    def _note_host(self, host: WorkerHost) -> None:
        telemetry.metrics.breaker("scheduler", host.url, self.hosts.state(host))

    async def _send(self, host: WorkerHost, dispatch: WorkerDispatch, timeout_ms: int) -> DispatchResult:
        headers = {"content-type": "application/json"}
        # Outside the signed body on purpose: the trace context only correlates spans, it authorises nothing.
        telemetry.inject_traceparent(headers)
        try:
            response = await self._http().post(
                f"{host.url}/v1/dispatch",
                content=dispatch.model_dump_json(),
                headers=headers,
                timeout=httpx2.Timeout(timeout_ms / 1000 + HTTP_SLACK_S, connect=10.0),
            )
        except (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout) as exc:
            # No connection, so no byte of the dispatch left: it did not run there, and may go elsewhere.
            self._record(dispatch, host, {"status": "unreachable", "detail": str(exc)[:300]})
            raise _NeverSent(f"cannot be reached ({type(exc).__name__}: {exc})") from None
        except httpx2.HTTPError as exc:
            self.hosts.unreachable(host, f"stopped answering ({type(exc).__name__})")
            self._record(dispatch, host, {"status": "interrupted", "detail": str(exc)[:300]})
            telemetry.metrics.dispatch_refused("control_plane", "interrupted")
            raise WorkerInterrupted(
                f"the worker scheduler at {host.url} stopped answering after dispatch {dispatch.dispatch_id} was "
                f"sent ({type(exc).__name__}: {exc}); whether it ran is unknown, so it was not retried anywhere. "
                "Check the workspace before running it again"
            ) from None
        self.hosts.reached(host)
        if response.status_code != 200:
            reason, message = _refusal(response)
            self._record(
                dispatch, host, {"status": "refused", "http_status": response.status_code, "reason": reason}
            )
            # The label is the scheduler's reason code; anything else it might say stays out of the label set.
            label = reason if len(reason) <= 40 and reason.replace("_", "").isalnum() else "other"
            telemetry.metrics.dispatch_refused("control_plane", label)
            raise WorkerUnavailable(
                f"the worker scheduler refused dispatch {dispatch.dispatch_id} ({response.status_code} {reason}): "
                f"{message}; nothing ran"
            )
        try:
            result = verify_dispatch_result(response.content, verify_key=self._result_key, dispatch=dispatch)
        except ResultRejected as exc:
            self._record(dispatch, host, {"status": "result_rejected", "detail": str(exc)})
            raise WorkerResultRejected(
                f"the scheduler's answer to dispatch {dispatch.dispatch_id} does not verify ({exc}); "
                "its outcome is unknown"
            ) from None
        self._record(dispatch, host, _result_summary(result))
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

    def _record(self, dispatch: WorkerDispatch, host: WorkerHost, outcome: dict[str, Any]) -> None:
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
                "scheduler": host.url,
                "outcome": outcome,
            }
        )


def _hosts_from(execution: ExecutionSettings) -> tuple[WorkerHost, ...]:
    """``schedulerEndpoints`` (or the one ``schedulerEndpoint``) as hosts, each an https:// URL."""
    entries = execution.scheduler_endpoints or [execution.scheduler_endpoint or ""]
    hosts = []
    for entry in entries:
        url, tenant = (entry, execution.tenant) if isinstance(entry, str) else (entry.url, entry.tenant)
        if not url.startswith("https://"):
            key = "schedulerEndpoints entry" if execution.scheduler_endpoints else "schedulerEndpoint"
            raise SettingsError(f"execution.{key} must be an https:// URL, got {url!r}")
        hosts.append(WorkerHost(url.rstrip("/"), tenant or execution.tenant))
    if len({host.url for host in hosts}) != len(hosts):
        raise SettingsError("execution.schedulerEndpoints names one scheduler twice")
    return tuple(hosts)


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
