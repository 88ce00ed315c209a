"""The docker-worker client with several schedulers (stand-in mTLS schedulers at the HTTP seam, as in
``test_docker_worker.py``): spread over the healthy ones, a failing health check is skipped before anything is
sent, and a scheduler that took the dispatch and then dropped the connection makes the action interrupted,
never sent to another."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from seepient.audit.log import AuditLog
from seepient.config.sections import ExecutionSettings
from seepient.config.settings import SettingsError
from seepient.crypto import init_deployment, load_signing_key, sign_dispatch_result
from seepient.execution.docker_worker import DockerWorkerExecutor, WorkerInterrupted, WorkerUnavailable
from seepient.execution.local import LocalExecutor
from seepient.protocol import ShellCommand, WorkerDispatch
from seepient.scheduler.config import load_scheduler_config
from seepient.scheduler.service import server_ssl_context
from tests.approved import run_shell
from tests.scheduler.worker_env import free_port


@dataclass
class _Standin:
    """One stand-in scheduler: ``health`` is its health status, ``dispatch`` how it treats a dispatch."""

    url: str
    dispatches: list[WorkerDispatch] = field(default_factory=list)
    health: int = 200
    drop: bool = False


def _answer(standin: _Standin, key_path: Path) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def dispatch(request: web.Request) -> web.StreamResponse:
        document = WorkerDispatch.model_validate_json(await request.read())
        standin.dispatches.append(document)
        if standin.drop:
            # The host dies with the dispatch in hand: the connection ends without an answer.
            assert request.transport is not None
            request.transport.abort()
            return web.Response()
        fields = {
            "dispatch_id": document.dispatch_id,
            "action_digest": document.action.digest,
            "exit_code": 0,
            "stdout": f"ran on {standin.url}\n",
            "duration_ms": 1,
            "finished_at": document.issued_at,
        }
        return web.Response(body=sign_dispatch_result(fields, load_signing_key(key_path)).model_dump_json())

    return dispatch


@asynccontextmanager
async def _schedulers(
    tmp_path: Path, count: int
) -> AsyncIterator[tuple[list[_Standin], DockerWorkerExecutor]]:
    workspace = tmp_path / "root" / "ws"
    workspace.mkdir(parents=True)
    directory = tmp_path / "deploy"
    init_deployment(directory, workspace_root=tmp_path / "root")
    context = server_ssl_context(load_scheduler_config(directory / "scheduler.json"))
    standins, runners = [], []
    for _ in range(count):
        port = free_port()
        standin = _Standin(f"https://127.0.0.1:{port}")

        async def health(_request: web.Request, standin: _Standin = standin) -> web.Response:
            return web.json_response(
                {"status": "ok" if standin.health == 200 else "degraded"}, status=standin.health
            )

        app = web.Application()
        app.router.add_post("/v1/dispatch", _answer(standin, directory / "result-signing.key"))
        app.router.add_get("/v1/health", health)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
        standins.append(standin)
        runners.append(runner)
    execution = json.loads((directory / "control-plane.json").read_text())["execution"]
    execution.pop("schedulerEndpoint")
    execution["schedulerEndpoints"] = [s.url for s in standins]
    audit = AuditLog(tmp_path / "audit.log")
    executor = DockerWorkerExecutor.from_settings(
        ExecutionSettings.model_validate(execution),
        workspace=workspace,
        local=LocalExecutor(workspace, seepient_home=tmp_path / "home"),
        session_id="ses_hosts",
        audit=audit,
    )
    try:
        yield standins, executor
    finally:
        await executor.aclose()
        for runner in runners:
            await runner.cleanup()
        audit.close()


async def _run(executor: DockerWorkerExecutor, command: str = "make test"):
    return await run_shell(
        executor, ShellCommand(command=command, cwd=str(executor.workspace), timeout_ms=5000)
    )


def _dispatch_records(tmp_path: Path) -> list[tuple[str, str]]:
    lines = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    return [
        (line["scheduler"], line["outcome"]["status"])
        for line in lines
        if line.get("type") == "worker_dispatch"
    ]


async def test_dispatches_are_spread_over_the_schedulers(tmp_path: Path) -> None:
    async with _schedulers(tmp_path, 2) as (standins, executor):
        outputs = [(await _run(executor)).stdout for _ in range(4)]
    assert [len(s.dispatches) for s in standins] == [2, 2]
    assert {f"ran on {s.url}\n" for s in standins} == set(outputs)


async def test_an_unhealthy_scheduler_is_skipped_before_anything_is_sent(tmp_path: Path) -> None:
    async with _schedulers(tmp_path, 2) as (standins, executor):
        standins[0].health = 503
        outcomes = [await _run(executor) for _ in range(3)]
    assert standins[0].dispatches == [] and len(standins[1].dispatches) == 3
    assert all(outcome.exit_code == 0 for outcome in outcomes)


async def test_a_scheduler_that_took_the_dispatch_and_died_is_not_retried_elsewhere(tmp_path: Path) -> None:
    async with _schedulers(tmp_path, 2) as (standins, executor):
        standins[0].drop = True
        with pytest.raises(WorkerInterrupted, match="whether it ran is unknown, so it was not retried"):
            await _run(executor)
        assert len(standins[0].dispatches) == 1 and standins[1].dispatches == []
        # The session goes on: later actions run, and the lost one is never among them.
        standins[0].drop = False
        later = [await _run(executor, f"make test-{number}") for number in range(2)]
    lost = standins[0].dispatches[0].action.digest
    assert all(outcome.exit_code == 0 for outcome in later)
    assert lost not in {
        d.action.digest for s in standins for d in s.dispatches[1 if s is standins[0] else 0 :]
    }
    assert _dispatch_records(tmp_path)[0] == (standins[0].url, "interrupted")


async def test_with_every_scheduler_unreachable_nothing_runs(tmp_path: Path) -> None:
    async with _schedulers(tmp_path, 2) as (standins, executor):
        for standin in standins:
            standin.health = 503
        with pytest.raises(WorkerUnavailable, match="worker schedulers cannot be reached.*nothing ran"):
            await _run(executor)
    assert [s.dispatches for s in standins] == [[], []]


def test_endpoints_are_https_and_named_once() -> None:
    base = {
        "backend": "docker-worker",
        "mtls": {"caCertPath": "a", "clientCertPath": "b", "clientKeyPath": "c"},
        "dispatchSigningKeyPath": "d",
        "resultVerifyKeyPath": "e",
    }
    for endpoints, problem in (
        (["https://a:1", "http://b:1"], "must be an https:// URL"),
        (["https://a:1", {"url": "https://a:1/", "tenant": "other"}], "names one scheduler twice"),
    ):
        settings = ExecutionSettings.model_validate({**base, "schedulerEndpoints": endpoints})
        with pytest.raises(SettingsError, match=problem):
            DockerWorkerExecutor.from_settings(settings, workspace=Path("/"), local=None)  # type: ignore[arg-type]
