"""``seepient scheduler serve``: the HTTPS service (aiohttp) that accepts signed dispatches from an allowed
mTLS identity, runs each in a fresh container and answers a signed ``DispatchResult``.

TLS requires a client certificate from the configured CA; the identity in it is checked against
``allowedClientIdentities`` on every request, in a middleware, because a TLS layer that merely demands a
certificate would let any holder of one from the same CA in. Every step is written to the scheduler's own
hash-chained audit log (``stateDir/audit.log``) with the dispatch id.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiodocker
from aiohttp import web

from seepient import telemetry
from seepient.audit.log import AuditLog
from seepient.crypto import sign_dispatch_result
from seepient.crypto.signing import key_id_for
from seepient.execution.control_guard import ControlGuard, repairs_note
from seepient.execution.control_watch import ControlWatch
from seepient.protocol import DispatchResult
from seepient.protocol.errors import ExecutionError
from seepient.protocol.fields import same_named
from seepient.scheduler.config import SchedulerConfig
from seepient.scheduler.launcher import ContainerLauncher, LaunchError, WorkerRun
from seepient.scheduler.nonces import NonceStore, NonceStoreError
from seepient.scheduler.peer import PeerRefused, authorize_peer
from seepient.scheduler.verify import (
    CLOCK_SKEW,
    MAX_DISPATCH_BYTES,
    DispatchRefused,
    RefusalReason,
    VerifiedDispatch,
    verify_dispatch,
)

AUDIT_LOG = "audit.log"
SWEEP_INTERVAL_S = 60.0
_STATUS = {
    RefusalReason.MALFORMED: 400,
    RefusalReason.UNKNOWN_KEY: 403,
    RefusalReason.BAD_SIGNATURE: 403,
    RefusalReason.REPLAYED: 409,
}
_IDENTITY = web.AppKey("identity", str)
_log = logging.getLogger("seepient.scheduler")


class SchedulerStartError(ExecutionError):
    """The scheduler cannot serve (no Docker engine, no worker image); the message says how to fix it."""


def server_ssl_context(config: SchedulerConfig) -> ssl.SSLContext:
    """TLS 1.2+ with our certificate, requiring a client certificate that chains to the configured CA."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(config.mtls.ca_cert_path))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(config.mtls.cert_path), str(config.mtls.key_path))
    context.verify_mode = ssl.CERT_REQUIRED
    return context


class SchedulerService:
    """The scheduler's state for one run: nonce store, audit log, Docker client, launcher, HTTP app."""

    def __init__(self, config: SchedulerConfig, *, docker_url: str | None = None) -> None:
        self.config = config
        self._docker_url = docker_url
        self._signing_key = config.result_signing_key()
        self._nonces: NonceStore | None = None
        self._docker: aiodocker.Docker | None = None
        self._launcher: ContainerLauncher | None = None
        self._audit: AuditLog | None = None
        self._sweeper: asyncio.Task[None] | None = None
        # One per leased workspace, shared by its concurrent dispatches (execution/control_guard.py).
        self._control: dict[Path, ControlWatch] = {}
        self.app = web.Application(client_max_size=MAX_DISPATCH_BYTES, middlewares=[self._authorize])
        self.app.router.add_get("/v1/health", self._health)
        self.app.router.add_post("/v1/dispatch", self._dispatch)
        self.app.router.add_get("/metrics", metrics_page)
        self.app.on_startup.append(self._start)
        self.app.on_cleanup.append(self._stop)

    @property
    def launcher(self) -> ContainerLauncher:
        assert self._launcher is not None, "the service has not started"
        return self._launcher

    async def _start(self, _app: web.Application) -> None:
        state_dir = self.config.state_dir
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        docker = aiodocker.Docker(url=self._docker_url)
        launcher = ContainerLauncher(
            docker,
            image=self.config.worker_image,
            state_dir=state_dir,
            pool_size=self.config.pool_size,
            on_error=lambda message: self._record("background_error", message=message),
        )
        try:
            await docker.images.inspect(self.config.worker_image)
            removed = await launcher.sweep()
        except aiodocker.DockerError as exc:
            await docker.close()
            if exc.status == 404:
                raise SchedulerStartError(
                    f"the worker image {self.config.worker_image} is not in the Docker engine; build it with "
                    "`seepient worker build-image` (or set workerImage in the scheduler config)"
                ) from None
            raise SchedulerStartError(
                f"cannot use the Docker engine: {exc.message}; start Docker or pass --docker-host URL"
            ) from None
        self._docker, self._launcher = docker, launcher
        self._nonces = NonceStore.open(state_dir)
        self._audit = AuditLog(state_dir / AUDIT_LOG)
        self._record("started", orphans_removed=removed, image=self.config.worker_image)
        self._sweeper = asyncio.ensure_future(self._sweep_periodically())

    async def _stop(self, _app: web.Application) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        if self._launcher is not None:
            await self._launcher.close()
        if self._docker is not None:
            await self._docker.close()
        if self._nonces is not None:
            self._nonces.close()
        self._record("stopped")

    async def _sweep_periodically(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_INTERVAL_S)
            try:
                removed = await self.launcher.sweep()
                assert self._nonces is not None
                pruned = await asyncio.to_thread(self._nonces.prune, before=_now() - 2 * CLOCK_SKEW)
            except Exception as exc:  # a failed sweep is retried next round; it must not stop the service
                self._record("sweep_failed", error=str(exc))
                continue
            if removed or pruned:
                self._record("swept", orphans_removed=removed, nonces_pruned=pruned)

    def _record(self, event: str, **fields: Any) -> None:
        telemetry.log_event(_log, event, _jsonable(fields))
        if self._audit is None:
            return
        self._audit.append(
            {"type": "scheduler", "event": event, "timestamp": _now().isoformat(), **_jsonable(fields)}
        )
        telemetry.metrics.audit_append(event)

    @web.middleware
    async def _authorize(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
        peer = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        try:
            identity = authorize_peer(peer, config=self.config, now=_now())
        except PeerRefused as exc:
            self._record("peer_refused", path=request.path, reason=str(exc))
            telemetry.metrics.dispatch_refused("scheduler", "peer")
            return _error(403, "forbidden", str(exc))
        request[_IDENTITY] = identity
        return await handler(request)

    async def _health(self, request: web.Request) -> web.Response:
        assert self._docker is not None
        try:
            version = await self._docker.version()
            engine = str(version.get("Version", "unknown"))
        except (aiodocker.DockerError, OSError) as exc:
            return web.json_response({"status": "degraded", "docker": f"unreachable: {exc}"}, status=503)
        return web.json_response(
            {
                "status": "ok",
                "docker": engine,
                "workerImage": self.config.worker_image,
                "resultKeyId": key_id_for(self._signing_key.public_key()),
                "identity": request[_IDENTITY],
            }
        )

    async def _dispatch(self, request: web.Request) -> web.Response:
        # The control plane's traceparent only links this span to its trace: it sits outside the signed
        # dispatch and grants nothing (a forged one mislabels a span, nothing more).
        parent = telemetry.remote_parent(request.headers)
        received = time.monotonic()
        with telemetry.span("seepient.scheduler.dispatch", parent=parent) as traced:
            response = await self._dispatch_traced(request, traced)
            traced.set("http.response.status_code", response.status)
        outcome = "ran" if response.status == 200 else "refused"
        telemetry.metrics.dispatch("scheduler", outcome, time.monotonic() - received)
        return response

    async def _dispatch_traced(self, request: web.Request, traced: telemetry.Span) -> web.Response:
        identity = request[_IDENTITY]
        raw = await request.read()
        assert self._nonces is not None
        try:
            verified = await asyncio.to_thread(
                verify_dispatch, raw, config=self.config, nonce_store=self._nonces, now=_now()
            )
        except DispatchRefused as exc:
            self._record(
                "dispatch_refused",
                dispatch_id=_claimed_id(raw),
                identity=identity,
                reason=exc.reason.value,
                message=exc.message,
            )
            traced.set("seepient.scheduler.refusal", exc.reason.value)
            telemetry.metrics.dispatch_refused("scheduler", exc.reason.value)
            return _error(_STATUS.get(exc.reason, 422), exc.reason.value, exc.message)
        except NonceStoreError as exc:
            self._record(
                "dispatch_refused", dispatch_id=_claimed_id(raw), identity=identity, reason="nonce_store"
            )
            telemetry.metrics.dispatch_refused("scheduler", "nonce_store")
            return _error(
                503, "nonce_store", f"{exc}; the scheduler refuses dispatches until it can record nonces"
            )
        dispatch = verified.dispatch
        traced.set("seepient.worker.dispatch_id", dispatch.dispatch_id)
        traced.set("seepient.action.digest", dispatch.action.digest)
        self._record(
            "dispatch_accepted",
            dispatch_id=dispatch.dispatch_id,
            identity=identity,
            tenant=dispatch.lease.tenant,
            workspace=str(verified.workspace),
            action_digest=dispatch.action.digest,
            kind=dispatch.action.kind,
            limits=dispatch.limits.model_dump(mode="json"),
        )
        with telemetry.span("seepient.scheduler.container") as container:
            result = await self._run(verified)
            container.set("seepient.execution.exit_code", result.exit_code)
            container.set("seepient.execution.timed_out", result.timed_out)
            container.set("seepient.execution.duration_ms", result.duration_ms)
            if result.error is not None:
                container.fail("worker_error")
        self._record(
            "dispatch_completed",
            dispatch_id=dispatch.dispatch_id,
            **same_named(result, ("exit_code", "timed_out", "oom_killed", "duration_ms", "error")),
            container=result.container.model_dump(mode="json") if result.container else None,
            result_signature=result.signature,
        )
        return web.Response(body=result.model_dump_json(), content_type="application/json")

    async def _run(self, verified: VerifiedDispatch) -> DispatchResult:
        dispatch = verified.dispatch
        fields: dict[str, Any] = {
            "dispatch_id": dispatch.dispatch_id,
            "action_digest": dispatch.action.digest,
        }
        # The container writes the leased workspace on this host: what it leaves for git, editors or shells
        # here to run is undone before the result is signed, as the local executor does after each command.
        watch = self._control.get(verified.workspace)
        if watch is None:
            state = self.config.state_dir
            watch = self._control[verified.workspace] = ControlWatch(
                ControlGuard(verified.workspace, quarantine_root=state / "quarantine"),
                journal_dir=state / "control",
            )
        await asyncio.to_thread(watch.before_command)
        try:
            run = await self.launcher.run(verified)
        except (LaunchError, aiodocker.DockerError, OSError) as exc:
            message = exc.message if isinstance(exc, aiodocker.DockerError) else str(exc)
            fields.update(exit_code=None, duration_ms=0, error=f"the worker did not run: {message}")
        else:
            fields.update(_run_fields(run))
        finally:
            repairs = await asyncio.to_thread(watch.after_command)
        if repairs:
            note = repairs_note(repairs)
            fields["stderr"] = f"{fields.get('stderr') or ''}".rstrip() + f"\n[{note}]\n"
            self._record("planted_undone", dispatch_id=dispatch.dispatch_id, paths=[r.path for r in repairs])
        fields["finished_at"] = _now()
        return await asyncio.to_thread(sign_dispatch_result, fields, self._signing_key)


_RUN_FIELDS = (
    "exit_code",
    "stdout",
    "stderr",
    "output_truncated",
    "duration_ms",
    "timed_out",
    "oom_killed",
    "container",
)


def _run_fields(run: WorkerRun) -> dict[str, Any]:
    return same_named(run, _RUN_FIELDS)


def _error(status: int, reason: str, message: str) -> web.Response:
    return web.json_response({"error": reason, "message": message}, status=status)


def _claimed_id(raw: bytes) -> str | None:
    # Only for the audit record of a refusal: the id the sender claimed, unverified and clipped.
    with contextlib.suppress(ValueError, AttributeError, UnicodeDecodeError):
        claimed = json.loads(raw).get("dispatch_id")
        return claimed[:128] if isinstance(claimed, str) else None
    return None


def _jsonable(fields: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


async def serve(
    config: SchedulerConfig,
    *,
    docker_url: str | None = None,
    on_ready: Callable[[str], None] = lambda _url: None,
) -> None:
    """Serve until cancelled (Ctrl-C or SIGTERM); pooled and in-flight containers are removed on the way out."""
    if config.log_format == "json":
        telemetry.use_json_logs()
    telemetry.configure(environ=None, service_name="seepient-scheduler")
    telemetry.metrics.enable()
    service = SchedulerService(config, docker_url=docker_url)
    runner = web.AppRunner(service.app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, config.listen.host, config.listen.port, ssl_context=server_ssl_context(config))
    plain: web.AppRunner | None = None
    try:
        await site.start()
        if config.metrics_listen is not None:
            plain = await _serve_metrics(config.metrics_listen.host, config.metrics_listen.port)
        on_ready(f"https://{config.listen.host}:{config.listen.port}")
        await asyncio.Event().wait()
    finally:
        if plain is not None:
            await plain.cleanup()
        await runner.cleanup()
        telemetry.flush()


async def metrics_page(_request: web.Request) -> web.Response:
    body, content_type = telemetry.metrics.exposition()
    return web.Response(body=body, headers={"content-type": content_type})


async def _serve_metrics(host: str, port: int) -> web.AppRunner:
    """Only ``GET /metrics``, without TLS: counters and durations, no ids, paths or identities in it."""
    app = web.Application()
    app.router.add_get("/metrics", metrics_page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
