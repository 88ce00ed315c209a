"""``seepient run --config control-plane.json`` executes through the real scheduler: the model's shell command
and file write run in workers, the control-plane process never touches Docker (watched from inside it by a
Python audit hook, and by a canary Docker socket in its ``DOCKER_HOST``), and no credential reaches a worker."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from seepient.scheduler.image import WORKER_UID
from tests.audit_view import merge_actions
from tests.conftest import BIN
from tests.scheduler.worker_env import (
    SECRET_ENV,
    SECRET_MARKER,
    WorkerDeployment,
    free_port,
    make_deployment,
    no_container_left_behind_fixture,  # noqa: F401 - registers the session fixture
    worker_image_fixture,  # noqa: F401 - registers the session fixture
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_container_left_behind")]

_WATCHED_CONTROL_PLANE = """
import json, os, sys
_log = open(os.environ["WATCH_LOG"], "a", buffering=1)
def _watch(event, args):
    if event == "socket.connect":
        _log.write(json.dumps({"connect": repr(args[1])}) + "\\n")
    elif event == "open" and isinstance(args[0], (str, bytes)) and os.fsencode(args[0]).endswith(b".sock"):
        _log.write(json.dumps({"open": os.fsdecode(args[0])}) + "\\n")
    elif event == "subprocess.Popen":
        _log.write(json.dumps({"exec": [os.fsdecode(a) for a in (args[1] or [])]}) + "\\n")
sys.addaudithook(_watch)
import atexit
atexit.register(lambda: _log.write(json.dumps({"modules": sorted(
    name for name in sys.modules if name.split(".")[0] in ("aiodocker", "docker")
)}) + "\\n"))
from seepient.surfaces.cli.entry import main
sys.argv = ["seepient", *sys.argv[1:]]
main()
"""


@pytest.fixture
def deployment(tmp_path: Path, worker_image: str) -> Iterator[WorkerDeployment]:
    deployed = make_deployment(tmp_path)
    deployed.start()
    yield deployed
    deployed.stop()


class _Canary:
    """A Unix socket posing as the Docker API; it counts whoever connects."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.connections = 0
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen()
        self._server.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._server.accept()
            except TimeoutError:
                continue
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._server.close()


def test_run_with_control_plane_config_executes_in_workers_and_never_touches_docker(
    deployment: WorkerDeployment, tmp_path: Path
) -> None:
    workspace = deployment.workspace
    script = tmp_path / "script.yaml"
    script.write_text(
        yaml.safe_dump(
            [
                {
                    "tool_calls": [
                        {
                            "name": "shell",
                            "arguments": {"command": "echo ran-in-$(hostname) uid=$(id -u); env"},
                        }
                    ]
                },
                {
                    "tool_calls": [
                        {
                            "name": "write_file",
                            "arguments": {"path": "notes/out.txt", "content": "from the worker\n"},
                        }
                    ]
                },
                {"text": "Done."},
            ]
        )
    )
    canary = _Canary(tmp_path / "canary-docker.sock")
    watch_log = tmp_path / "watch.jsonl"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / "home"),
        "SEEPIENT_HOME": str(tmp_path / "seepient-home"),
        "LANG": "C.UTF-8",
        "DOCKER_HOST": f"unix://{canary.path}",
        "WATCH_LOG": str(watch_log),
        **SECRET_ENV,
    }
    try:
        proc = subprocess.run(
            [
                str(BIN / "python"),
                "-c",
                _WATCHED_CONTROL_PLANE,
                "run",
                "look around",
                "-y",
                "--json",
                "--model",
                f"replay:{script}",
                "--workspace",
                str(workspace),
                "--config",
                str(deployment.directory / "control-plane.json"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
            cwd=workspace,
        )
    finally:
        canary.close()
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    results = [event for event in events if event["type"] == "tool_result"]
    assert [result["status"] for result in results] == ["ok", "ok"], results
    shell_output = results[0]["output"]
    assert "ran-in-worker" in shell_output and f"uid={WORKER_UID}" in shell_output
    assert SECRET_MARKER not in shell_output and "DOCKER_HOST" not in shell_output
    assert results[0]["data"]["sandbox"] == "docker-worker"
    # The control plane runs as root; a file owned by the worker uid was written by the worker.
    written = workspace / "notes" / "out.txt"
    assert written.read_text() == "from the worker\n"
    assert written.stat().st_uid == WORKER_UID

    watched = [json.loads(line) for line in watch_log.read_text().splitlines()]
    assert canary.connections == 0
    assert not [entry for entry in watched if "open" in entry], watched
    assert [entry["modules"] for entry in watched if "modules" in entry] == [[]]
    connects = [entry["connect"] for entry in watched if "connect" in entry]
    assert connects and all(f"{deployment.port}" in address for address in connects), connects
    executed = [entry["exec"] for entry in watched if "exec" in entry]
    assert not any("ran-in-" in " ".join(argv) or "docker" in " ".join(argv) for argv in executed), executed

    records = merge_actions(
        [json.loads(line) for line in (tmp_path / "seepient-home" / "audit.log").read_text().splitlines()]
    )
    dispatches = [record for record in records if record["type"] == "worker_dispatch"]
    actions = [record for record in records if record["type"] == "action"]
    assert len(dispatches) == 2 and len(actions) == 2
    assert [d["action_digest"] for d in dispatches] == [a["action"]["digest"] for a in actions]
    scheduler_ids = {
        r.get("dispatch_id") for r in deployment.scheduler_audit() if r.get("event") == "dispatch_completed"
    }
    assert {d["dispatch_id"] for d in dispatches} <= scheduler_ids


def test_run_without_a_scheduler_refuses_the_command_and_runs_nothing_locally(
    tmp_path: Path,
    worker_image: str,
) -> None:
    deployed = make_deployment(tmp_path)  # configured, never started
    script = tmp_path / "script.yaml"
    marker = deployed.workspace / "ran-locally"
    script.write_text(
        yaml.safe_dump(
            [
                {"tool_calls": [{"name": "shell", "arguments": {"command": "touch ran-locally"}}]},
                {"text": "Done."},
            ]
        )
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / "home"),
        "SEEPIENT_HOME": str(tmp_path / "seepient-home"),
        "LANG": "C.UTF-8",
    }
    proc = subprocess.run(
        [
            str(BIN / "seepient"),
            "run",
            "try",
            "-y",
            "--json",
            "--model",
            f"replay:{script}",
            "--workspace",
            str(deployed.workspace),
            "--config",
            str(deployed.directory / "control-plane.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = next(json.loads(line) for line in proc.stdout.splitlines() if '"tool_result"' in line)
    assert result["status"] == "error" and "cannot be reached" in result["output"]
    assert not marker.exists()


def test_serve_with_control_plane_config_executes_through_the_scheduler(
    deployment: WorkerDeployment, tmp_path: Path
) -> None:
    import time

    import httpx2

    import seepient

    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / "home"),
        "SEEPIENT_HOME": str(tmp_path / "seepient-home"),
        "LANG": "C.UTF-8",
        **SECRET_ENV,
    }
    database = f"sqlite:///{tmp_path / 'server.db'}"
    token = subprocess.run(
        [str(BIN / "seepient"), "tokens", "create", "--principal", "alice", "--database", database],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    ).stdout.strip()
    port = free_port()
    # The operator's control-plane.json: the execution block from certs init plus the server's grants.
    config = json.loads((deployment.directory / "control-plane.json").read_text())
    config["server"] = {
        "principals": {
            "alice": {"roots": [str(deployment.root)], "allowReplay": True, "maxMode": "ask-untrusted"}
        }
    }
    config_file = tmp_path / "control-plane-server.json"
    config_file.write_text(json.dumps(config))
    server = subprocess.Popen(
        [
            str(BIN / "seepient"),
            "serve",
            "--port",
            str(port),
            "--database",
            database,
            "--config",
            str(config_file),
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            try:
                if (
                    httpx2.get(f"http://127.0.0.1:{port}/v1/health", timeout=1, trust_env=False).status_code
                    == 200
                ):
                    break
            except httpx2.TransportError:
                pass
            assert time.monotonic() < deadline, "seepient serve did not start"
            time.sleep(0.1)
        script = deployment.root / "script.yaml"
        script.write_text(
            yaml.safe_dump(
                [
                    {
                        "tool_calls": [
                            {"name": "shell", "arguments": {"command": "echo served-by-$(hostname); env"}}
                        ]
                    },
                    {"text": "Done."},
                ]
            )
        )
        with seepient.Client(f"http://127.0.0.1:{port}", token) as client:
            session = client.sessions.create(
                workspace=str(deployment.workspace), model=f"replay:{script}", approver=lambda _request: True
            )
            reply = session.chat("run it")
    finally:
        server.send_signal(2)
        server.communicate(timeout=30)
    (result,) = reply.tool_results
    assert result.status == "ok" and "served-by-worker" in result.output
    assert SECRET_MARKER not in result.output
    completed = [r for r in deployment.scheduler_audit() if r.get("event") == "dispatch_completed"]
    assert len(completed) == 1


def test_scheduler_serve_explains_a_missing_image_and_a_missing_engine(
    tmp_path: Path, worker_image: str
) -> None:
    deployed = make_deployment(tmp_path)
    config = json.loads((deployed.directory / "scheduler.json").read_text())
    config["workerImage"] = "seepient/worker:does-not-exist"
    (deployed.directory / "scheduler.json").write_text(json.dumps(config))
    serve = [
        str(BIN / "seepient"),
        "scheduler",
        "serve",
        "--config",
        str(deployed.directory / "scheduler.json"),
    ]
    missing_image = subprocess.run(serve, capture_output=True, text=True, timeout=60)
    assert missing_image.returncode == 1
    assert "seepient/worker:does-not-exist is not in the Docker engine" in missing_image.stderr
    assert "seepient worker build-image" in missing_image.stderr and "Traceback" not in missing_image.stderr
    no_engine = subprocess.run(
        [*serve, "--docker-host", f"unix://{tmp_path / 'no-docker.sock'}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert no_engine.returncode == 1 and "cannot use the Docker engine" in no_engine.stderr
    assert "Traceback" not in no_engine.stderr
