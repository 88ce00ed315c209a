"""Two real schedulers on this machine serve one control plane (``execution.schedulerEndpoints``). ``kill -9`` of
the first while its container runs a command that appends a line: the line is there at most once, the action is
reported interrupted (never retried on the second), no container is left once the first scheduler restarts,
and the rest of the actions run on the second."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from seepient.audit.log import AuditLog
from seepient.execution.worker_hosts import WorkerHost, WorkerHosts
from seepient.protocol import ShellCommand
from seepient.scheduler.launcher import scheduler_instance
from tests.approved import run_shell
from tests.conftest import BIN
from tests.scheduler.worker_env import (
    WorkerDeployment,
    containers_of,
    free_port,
    make_deployment,
    no_container_left_behind_fixture,  # noqa: F401 - registers the session fixture
    register_scheduler,
    worker_image_fixture,  # noqa: F401 - registers the session fixture
)
from tests.support.scripts import write_script

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_container_left_behind")]

SLOW = "sleep 6; echo appended >> appended.txt"


def _second(first: WorkerDeployment) -> WorkerDeployment:
    """Another scheduler of the same deployment (same CA, keys and tenant root), on its own port and state."""
    config = json.loads((first.directory / "scheduler.json").read_text())
    port = free_port()
    config["listen"]["port"] = port
    config["stateDir"] = str(register_scheduler(first.directory / "scheduler-state-second"))
    (first.directory / "scheduler-second.json").write_text(json.dumps(config, indent=2))
    return WorkerDeployment(
        first.directory, first.root, first.workspace, port, config_name="scheduler-second.json"
    )


def _containers(deployment: WorkerDeployment) -> list[str]:
    return containers_of(scheduler_instance(deployment.state_dir))


def _until(condition, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_kill_9_of_a_scheduler_mid_command_interrupts_that_action_only(
    tmp_path_factory: pytest.TempPathFactory, worker_image: str, tmp_path: Path
) -> None:
    first = make_deployment(tmp_path_factory.mktemp("failover"))
    second = _second(first)
    first.start()
    second.start()
    try:
        control = json.loads((first.directory / "control-plane.json").read_text())
        execution = control["execution"]
        execution.pop("schedulerEndpoint")
        execution["schedulerEndpoints"] = [first.endpoint, second.endpoint]
        config = first.directory / "control-plane-two.json"
        config.write_text(json.dumps(control, indent=2))
        script = write_script(
            tmp_path / "script.yaml",
            [
                {"tool_calls": [{"name": "shell", "arguments": {"command": SLOW}}]},
                {"tool_calls": [{"name": "shell", "arguments": {"command": "echo two >> after.txt"}}]},
                {"tool_calls": [{"name": "shell", "arguments": {"command": "echo three >> after.txt"}}]},
                {"text": "Done."},
            ],
        )
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "SEEPIENT_HOME": str(tmp_path / "seepient-home"),
            "LANG": "C.UTF-8",
        }
        run = subprocess.Popen(
            [
                str(BIN / "seepient"),
                *("run", "go", "-y", "--json", "--model", f"replay:{script}"),
                *("--workspace", str(first.workspace), "--config", str(config)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        _until(lambda: _containers(first) != [], "the first scheduler's container")
        assert first.process is not None
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait()
        first.process = None
        stdout, stderr = run.communicate(timeout=240)
        assert run.returncode == 0, stderr

        results = [e for e in map(json.loads, stdout.splitlines()) if e["type"] == "tool_result"]
        assert [r["status"] for r in results] == ["error", "ok", "ok"], results
        assert "not retried" in results[0]["output"] and "unknown" in results[0]["output"]
        assert (first.workspace / "after.txt").read_text() == "two\nthree\n"

        lines = [
            json.loads(line) for line in (tmp_path / "seepient-home" / "audit.log").read_text().splitlines()
        ]
        dispatches = [line for line in lines if line.get("type") == "worker_dispatch"]
        slow_digest = dispatches[0]["action_digest"]
        slow = [d for d in dispatches if d["action_digest"] == slow_digest]
        assert [(d["scheduler"], d["outcome"]["status"]) for d in slow] == [(first.endpoint, "interrupted")]
        rest = dispatches[1:]
        assert [(d["scheduler"], d["outcome"]["status"]) for d in rest] == [(second.endpoint, "ran")] * 2
        outcomes = [line for line in lines if line.get("type") == "outcome"]
        assert outcomes[0]["outcome"]["status"] == "interrupted"
        served = [e for e in second.scheduler_audit() if e.get("event") == "dispatch_accepted"]
        assert slow_digest not in {e["action_digest"] for e in served} and len(served) == 2

        # The first comes back: its sweep removes what its killed predecessor left running.
        first.start()
        _until(lambda: _containers(first) == [], "the orphan sweep", timeout_s=30)
        appended = first.workspace / "appended.txt"
        assert not appended.exists() or appended.read_text().count("appended") <= 1
    finally:
        first.stop()
        second.stop()


def test_a_dispatch_that_could_not_be_sent_goes_to_the_next_scheduler(
    tmp_path_factory: pytest.TempPathFactory, worker_image: str, tmp_path: Path
) -> None:
    live = make_deployment(tmp_path_factory.mktemp("failover-next"))
    live.start()
    dead = WorkerHost(f"https://127.0.0.1:{free_port()}", "default")
    hosts = WorkerHosts((dead, WorkerHost(live.endpoint, "default")))
    # Its last health check passed, so the dispatch itself is what finds it gone: the connection is refused
    # before any byte leaves, and the same action may go to the next scheduler.
    hosts.reached(dead)
    audit = AuditLog(tmp_path / "audit.log")

    async def go():
        executor = live.executor(audit=audit)
        executor.hosts = hosts
        try:
            command = ShellCommand(
                command="echo landed >> landed.txt", cwd=str(live.workspace), timeout_ms=20_000
            )
            return await run_shell(executor, command)
        finally:
            await executor.aclose()

    try:
        outcome = asyncio.run(go())
    finally:
        live.stop()
        audit.close()
    assert outcome.exit_code == 0
    assert (live.workspace / "landed.txt").read_text() == "landed\n"
    records = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    sent = [(r["scheduler"], r["outcome"]["status"]) for r in records if r.get("type") == "worker_dispatch"]
    assert sent == [(dead.url, "unreachable"), (live.endpoint, "ran")]
    assert hosts.last_error(dead) is not None and "cannot be reached" in hosts.last_error(dead)
