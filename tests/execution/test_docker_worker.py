"""The control plane's docker-worker executor against a stand-in scheduler (a local mTLS server at the HTTP
seam): it believes only results signed by the scheduler's key for its own dispatch, maps refusals to a
clear "nothing ran", refuses operations that would execute locally, and reads its settings strictly."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from seepient.audit.log import AuditLog
from seepient.config.sections import ExecutionSettings
from seepient.config.settings import SettingsError
from seepient.crypto import generate_signing_key, init_deployment, load_signing_key, sign_dispatch_result
from seepient.execution.docker_worker import DockerWorkerExecutor, WorkerResultRejected, WorkerUnavailable
from seepient.execution.local import LocalExecutor
from seepient.protocol import (
    Capability,
    FileChange,
    FileChangeSet,
    SandboxUnavailable,
    ShellCommand,
    UnsupportedAction,
    WorkerDispatch,
    WorktreeCommand,
)
from seepient.protocol.actions import MemoryAction, ProcessControl
from seepient.scheduler.config import load_scheduler_config
from seepient.scheduler.service import server_ssl_context
from tests.approved import approved, commit, run_shell

Answer = Callable[[WorkerDispatch], Awaitable[web.Response]]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _result(dispatch: WorkerDispatch, key: Any, **fields: Any) -> str:
    base = {
        "dispatch_id": dispatch.dispatch_id,
        "action_digest": dispatch.action.digest,
        "exit_code": 0,
        "stdout": "fine\n",
        "duration_ms": 5,
        "finished_at": dt.datetime.now(dt.UTC),
    }
    base.update(fields)
    return sign_dispatch_result(base, key).model_dump_json()


async def _healthy(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def _with_scheduler(
    tmp_path: Path, answer: Answer, use: Callable[[DockerWorkerExecutor], Awaitable[Any]]
) -> Any:
    workspace = tmp_path / "root" / "ws"
    workspace.mkdir(parents=True)
    directory = tmp_path / "deploy"
    if not directory.exists():
        init_deployment(directory, workspace_root=tmp_path / "root")
    config = load_scheduler_config(directory / "scheduler.json")
    received: list[WorkerDispatch] = []

    async def dispatch(request: web.Request) -> web.Response:
        document = WorkerDispatch.model_validate_json(await request.read())
        received.append(document)
        return await answer(document)

    app = web.Application()
    app.router.add_post("/v1/dispatch", dispatch)
    app.router.add_get("/v1/health", _healthy)
    runner = web.AppRunner(app)
    await runner.setup()
    port = _free_port()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=server_ssl_context(config)).start()
    settings = ExecutionSettings.model_validate(
        {
            **json.loads((directory / "control-plane.json").read_text())["execution"],
            "schedulerEndpoint": f"https://127.0.0.1:{port}",
        }
    )
    audit = AuditLog(tmp_path / "audit.log")
    executor = DockerWorkerExecutor.from_settings(
        settings,
        workspace=workspace,
        local=LocalExecutor(workspace, seepient_home=tmp_path / "home"),
        session_id="ses_x",
        audit=audit,
    )
    try:
        return await use(executor), received
    finally:
        await executor.aclose()
        await runner.cleanup()
        audit.close()


def _audit(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]


def _shell(workspace_of: Callable[[DockerWorkerExecutor], Path] = lambda e: e.workspace):
    async def use(executor: DockerWorkerExecutor):
        return await run_shell(
            executor, ShellCommand(command="make test", cwd=str(workspace_of(executor)), timeout_ms=5000)
        )

    return use


def test_a_signed_result_for_our_dispatch_becomes_the_shell_outcome(tmp_path: Path) -> None:
    async def answer(dispatch: WorkerDispatch) -> web.Response:
        key = load_signing_key(tmp_path / "deploy" / "result-signing.key")
        return web.Response(
            text=_result(dispatch, key, exit_code=2, stderr="boom\n", oom_killed=True),
            content_type="application/json",
        )

    outcome, received = asyncio.run(_with_scheduler(tmp_path, answer, _shell()))
    assert (outcome.exit_code, outcome.stdout, outcome.sandbox) == (2, "fine\n", "docker-worker")
    assert "ran out of memory" in outcome.stderr
    (dispatch,) = received
    assert dispatch.action.payload.command == "make test" and dispatch.limits.timeout_ms == 5000
    assert dispatch.lease.tenant == "default" and dispatch.lease.workspace == str(tmp_path / "root" / "ws")
    (record,) = _audit(tmp_path)
    assert record["type"] == "worker_dispatch" and record["dispatch_id"] == dispatch.dispatch_id
    assert record["action_digest"] == dispatch.action.digest and record["outcome"]["status"] == "ran"


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda d, k: _result(d, generate_signing_key()), id="another-key"),
        pytest.param(lambda d, k: _result(d, k).replace("fine\\n", "forged\\n"), id="edited-after-signing"),
        pytest.param(
            lambda d, k: _result(d.model_copy(update={"dispatch_id": "dsp_other"}), k), id="another-dispatch"
        ),
        pytest.param(lambda d, k: "not json", id="garbage"),
    ],
)
def test_a_result_that_does_not_verify_is_not_believed(tmp_path: Path, forge) -> None:
    async def answer(dispatch: WorkerDispatch) -> web.Response:
        key = load_signing_key(tmp_path / "deploy" / "result-signing.key")
        return web.Response(text=forge(dispatch, key), content_type="application/json")

    with pytest.raises(WorkerResultRejected, match="does not verify"):
        asyncio.run(_with_scheduler(tmp_path, answer, _shell()))
    assert _audit(tmp_path)[-1]["outcome"]["status"] == "result_rejected"


def test_a_refusal_says_nothing_ran(tmp_path: Path) -> None:
    async def answer(_dispatch: WorkerDispatch) -> web.Response:
        return web.json_response({"error": "replayed", "message": "already used"}, status=409)

    with pytest.raises(WorkerUnavailable, match=r"409 replayed\): already used; nothing ran"):
        asyncio.run(_with_scheduler(tmp_path, answer, _shell()))
    assert _audit(tmp_path)[-1]["outcome"]["reason"] == "replayed"


def test_a_commit_outcome_travels_in_the_signed_stdout(tmp_path: Path) -> None:
    async def answer(dispatch: WorkerDispatch) -> web.Response:
        key = load_signing_key(tmp_path / "deploy" / "result-signing.key")
        stdout = json.dumps({"code": "FILE_CHANGED", "message": "a.txt changed", "path": "a.txt"})
        return web.Response(
            text=_result(dispatch, key, exit_code=1, stdout=stdout), content_type="application/json"
        )

    async def use(executor: DockerWorkerExecutor):
        return await commit(executor, FileChange(path="a.txt", pre_image_sha256="0" * 64, new_content="x"))

    outcome, received = asyncio.run(_with_scheduler(tmp_path, answer, use))
    assert outcome.code == "FILE_CHANGED" and received[0].action.kind == "file_change"


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(ShellCommand(command="sleep 1", cwd=".", background=True), id="background-command"),
        pytest.param(ProcessControl(operation="kill", process_id="bg_1"), id="process-control"),
        pytest.param(
            WorktreeCommand(operation="list", argv=("git", "worktree", "list"), cwd="."), id="worktree"
        ),
        pytest.param(
            FileChangeSet(
                changes=(
                    FileChange(path="one.txt", pre_image_sha256=None, new_content="1"),
                    FileChange(path="two.txt", pre_image_sha256=None, new_content="2"),
                )
            ),
            id="several-files",
        ),
    ],
)
def test_what_would_execute_on_the_control_plane_is_refused_and_nothing_is_sent(
    tmp_path: Path, payload: Any
) -> None:
    async def answer(_dispatch: WorkerDispatch) -> web.Response:
        raise AssertionError("nothing may be dispatched")

    async def use(executor: DockerWorkerExecutor):
        with pytest.raises(UnsupportedAction, match="not available with the docker-worker backend"):
            await executor.execute(approved(payload))
        return sorted(path.name for path in executor.workspace.iterdir())

    files, received = asyncio.run(_with_scheduler(tmp_path, answer, use))
    assert files == [] and received == []
    assert not (tmp_path / "audit.log").exists() or _audit(tmp_path) == []


def test_the_dispatch_carries_the_approved_draft_itself(tmp_path: Path) -> None:
    """No draft is rebuilt for the worker: the scheduler signs and runs the very action the intent record and the
    approval name (its id, session, call and digest)."""

    async def answer(dispatch: WorkerDispatch) -> web.Response:
        key = load_signing_key(tmp_path / "deploy" / "result-signing.key")
        return web.Response(text=_result(dispatch, key), content_type="application/json")

    action = approved(ShellCommand(command="make test", cwd=".", timeout_ms=5000), session_id="ses_owner")

    async def use(executor: DockerWorkerExecutor):
        return await executor.execute(action)

    _, received = asyncio.run(_with_scheduler(tmp_path, answer, use))
    (dispatch,) = received
    assert dispatch.action == action.draft and dispatch.action.digest == action.digest
    assert (dispatch.action.id, dispatch.action.session_id) == (action.id, "ses_owner")


def test_a_draft_that_was_not_approved_is_not_sent(tmp_path: Path) -> None:
    async def answer(_dispatch: WorkerDispatch) -> web.Response:
        raise AssertionError("nothing may be dispatched")

    draft = approved(ShellCommand(command="make test", cwd=".", timeout_ms=5000)).draft

    async def use(executor: DockerWorkerExecutor):
        with pytest.raises(TypeError, match="approved actions only"):
            await executor.execute(draft)  # type: ignore[arg-type]

    _, received = asyncio.run(_with_scheduler(tmp_path, answer, use))
    assert received == []


def test_memory_writes_stay_with_the_control_planes_own_executor(tmp_path: Path) -> None:
    async def answer(_dispatch: WorkerDispatch) -> web.Response:
        raise AssertionError("nothing may be dispatched")

    note = MemoryAction(
        command="create",
        scope="user",
        path="note.md",
        change=FileChange(path="note.md", pre_image_sha256=None, new_content="remember\n"),
    )

    async def use(executor: DockerWorkerExecutor):
        return await commit(executor, note)

    outcome, received = asyncio.run(_with_scheduler(tmp_path, answer, use))
    assert outcome.ok and received == []
    assert (tmp_path / "home" / "memory" / "user" / "note.md").read_text() == "remember\n"


def test_settings_must_name_every_file_and_an_https_endpoint() -> None:
    with pytest.raises(SettingsError, match="needs execution.schedulerEndpoint.*dispatchSigningKeyPath"):
        DockerWorkerExecutor.from_settings(
            ExecutionSettings.model_validate({"backend": "docker-worker"}),
            workspace=Path("/"),
            local=None,  # type: ignore[arg-type]
        )
    complete = {
        "backend": "docker-worker",
        "schedulerEndpoint": "http://127.0.0.1:8443",
        "mtls": {"caCertPath": "a", "clientCertPath": "b", "clientKeyPath": "c"},
        "dispatchSigningKeyPath": "d",
        "resultVerifyKeyPath": "e",
    }
    with pytest.raises(SettingsError, match="must be an https:// URL"):
        DockerWorkerExecutor.from_settings(
            ExecutionSettings.model_validate(complete), workspace=Path("/"), local=None
        )  # type: ignore[arg-type]
    complete["schedulerEndpoint"] = "https://127.0.0.1:8443"
    with pytest.raises(SettingsError, match="cannot load the certificates|cannot read"):
        DockerWorkerExecutor.from_settings(
            ExecutionSettings.model_validate(complete), workspace=Path("/"), local=None
        )  # type: ignore[arg-type]


def test_a_command_that_needs_the_network_is_refused_before_any_dispatch(tmp_path: Path) -> None:
    async def answer(dispatch: WorkerDispatch) -> web.Response:
        raise AssertionError("nothing may be dispatched")

    async def use(executor: DockerWorkerExecutor):  # type: ignore[no-untyped-def]
        with pytest.raises(SandboxUnavailable, match="without any network"):
            await run_shell(
                executor,
                ShellCommand(
                    command="pip install requests",
                    cwd=str(executor.workspace),
                    capabilities=(Capability.NETWORK,),
                    timeout_ms=5000,
                ),
            )

    _, received = asyncio.run(_with_scheduler(tmp_path, answer, use))
    assert received == []
    assert not (tmp_path / "audit.log").exists() or _audit(tmp_path) == []
