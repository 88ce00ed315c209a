"""Shared pieces for tests that drive the real scheduler and real Docker: the Docker gate, the worker image,
a deployment from ``init_deployment`` with a free port, the scheduler as a real ``seepient`` process, and a
raw mTLS client for attacks. Import the fixtures into a test module to use them."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest

from seepient.config.sections import WorkerLimitSettings
from seepient.crypto import create_dispatch, init_deployment, load_signing_key, load_verify_key
from seepient.execution.docker_worker import DockerWorkerExecutor, client_ssl_context
from seepient.execution.local import LocalExecutor
from seepient.protocol import (
    DispatchLimits,
    PreparedActionDraft,
    ShellCommand,
    WorkerDispatch,
    WorkspaceLease,
)
from seepient.scheduler.image import DEFAULT_TAG, WORKER_UID, build_worker_image
from seepient.scheduler.launcher import DISPATCH_LABEL, SCHEDULER_LABEL, scheduler_instance
from tests.conftest import BIN
from tests.support.ports import free_port

SECRET_MARKER = "SEEPIENT-WORKER-SECRET-51d2"
SECRET_ENV = {
    "OPENAI_API_KEY": f"sk-{SECRET_MARKER}",
    "ANTHROPIC_API_KEY": SECRET_MARKER,
    "GITHUB_TOKEN": SECRET_MARKER,
    "DATABASE_URL": f"postgresql://app:{SECRET_MARKER}@db/app",
    "SESSION_SECRET": SECRET_MARKER,
}


def require_docker() -> None:
    """Skip with the reason when no Docker engine answers; under CI (``$CI`` set) that is a failure."""
    reason = None
    if shutil.which("docker") is None:
        reason = "the docker CLI is not installed"
    else:
        probe = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True
        )
        if probe.returncode != 0:
            reason = f"no Docker engine answers: {probe.stderr.strip()[:200]}"
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"worker-mode tests need a Docker engine in CI, but {reason}")
    pytest.skip(f"worker-mode tests need a Docker engine: {reason}")


@pytest.fixture(scope="session", name="worker_image")
def worker_image_fixture() -> str:
    """The worker image for this checkout: built once (about a minute with debootstrap), then cached by digest."""
    require_docker()
    if os.geteuid() != 0 or (
        shutil.which("debootstrap") is None and not os.path.exists("/usr/sbin/debootstrap")
    ):
        probe = subprocess.run(["docker", "image", "inspect", DEFAULT_TAG], capture_output=True)
        if probe.returncode != 0:
            message = "building the worker image needs root and debootstrap (apt-get install debootstrap)"
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
        return DEFAULT_TAG
    return build_worker_image(DEFAULT_TAG).tag


_OUR_SCHEDULERS: set[str] = set()
"""Scheduler instances (``seepient.scheduler`` label values) this test session created; other people's
schedulers on a shared engine are none of its business."""


def register_scheduler(state_dir: Path) -> Path:
    """Count the scheduler (or launcher) with this state directory as one of this session's."""
    _OUR_SCHEDULERS.add(scheduler_instance(state_dir))
    return state_dir


def labelled_containers() -> list[str]:
    """Worker containers of this session's schedulers that still exist."""
    return [found for instance in sorted(_OUR_SCHEDULERS) for found in containers_of(instance)]


def containers_of(instance: str) -> list[str]:
    """Worker containers (running or not) of the scheduler instance ``instance``."""
    done = subprocess.run(
        [
            "docker",
            "ps",
            "-aq",
            "--filter",
            f"label={SCHEDULER_LABEL}={instance}",
            "--filter",
            f"label={DISPATCH_LABEL}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


@pytest.fixture(scope="session", name="no_container_left_behind")
def no_container_left_behind_fixture() -> Iterator[None]:
    """After the whole session, not one worker container may remain."""
    require_docker()
    yield
    deadline = time.monotonic() + 15
    while labelled_containers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert labelled_containers() == [], "worker containers were left behind"


@pytest.fixture(scope="module", name="deployment")
def deployment_fixture(
    tmp_path_factory: pytest.TempPathFactory, worker_image: str
) -> Iterator[WorkerDeployment]:
    """One started scheduler for all the tests of a module (starting one costs seconds), stopped after them."""
    deployed = make_deployment(tmp_path_factory.mktemp("worker"))
    deployed.start()
    yield deployed
    deployed.stop()


@dataclass
class WorkerDeployment:
    """One ``certs init`` deployment with a tenant workspace owned by the worker uid."""

    directory: Path
    root: Path
    workspace: Path
    port: int
    process: subprocess.Popen[str] | None = None
    stderr_path: Path = field(default_factory=Path)
    config_name: str = "scheduler.json"
    """Several schedulers may serve one deployment (one control plane), each with its own config file."""

    @property
    def endpoint(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def state_dir(self) -> Path:
        return Path(json.loads((self.directory / self.config_name).read_text())["stateDir"])

    def start(self, env: dict[str, str] | None = None) -> None:
        environment = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.directory),
            "LANG": "C.UTF-8",
            **SECRET_ENV,
        }
        environment.update(env or {})
        self.stderr_path = self.directory / f"scheduler-{time.monotonic_ns()}.log"
        self.process = subprocess.Popen(
            [str(BIN / "seepient"), "scheduler", "serve", "--config", str(self.directory / self.config_name)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr_path.open("w"),
            env=environment,
            text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the scheduler exited: {self.stderr_path.read_text()}")
            if "listening on" in self.stderr_path.read_text():
                return
            time.sleep(0.05)
        raise AssertionError(f"the scheduler did not start: {self.stderr_path.read_text()}")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def ssl_context(
        self, cert: str = "control-plane.pem", key: str = "control-plane-key.pem"
    ) -> ssl.SSLContext:
        return client_ssl_context(self.directory / "ca.pem", self.directory / cert, self.directory / key)

    def post(
        self, body: str | bytes, *, context: ssl.SSLContext | None = None, path: str = "/v1/dispatch"
    ) -> httpx2.Response:
        with httpx2.Client(verify=context or self.ssl_context(), trust_env=False, timeout=60) as client:
            if path == "/v1/health":
                return client.get(self.endpoint + path)
            return client.post(
                self.endpoint + path, content=body, headers={"content-type": "application/json"}
            )

    def dispatch(
        self,
        command: str = "echo hi",
        *,
        now: dt.datetime | None = None,
        workspace: str | None = None,
        signing_key: Any = None,
        **limits: Any,
    ) -> WorkerDispatch:
        now = now or dt.datetime.now(dt.UTC)
        action = PreparedActionDraft(
            session_id="ses_test",
            call_id="call_1",
            tool="shell",
            kind="shell",
            payload=ShellCommand(
                command=command, cwd=str(self.workspace), timeout_ms=limits.get("timeout_ms", 20_000)
            ),
            read_only=False,
            summary=command,
        )
        lease = WorkspaceLease(
            tenant="default",
            workspace=workspace or str(self.workspace),
            expires_at=now + dt.timedelta(minutes=5),
        )
        chosen = {"cpus": 1.0, "memory_mb": 256, "pids": 64, "timeout_ms": 20_000, "output_bytes": 100_000}
        chosen.update(limits)
        return create_dispatch(
            action,
            lease=lease,
            limits=DispatchLimits(**chosen),
            signing_key=signing_key or load_signing_key(self.directory / "dispatch-signing.key"),
            now=now,
        )

    def executor(self, *, session_id: str = "ses_test", audit: Any = None) -> DockerWorkerExecutor:
        return DockerWorkerExecutor(
            workspace=self.workspace,
            endpoint=self.endpoint,
            ssl_context=self.ssl_context(),
            signing_key=load_signing_key(self.directory / "dispatch-signing.key"),
            result_key=load_verify_key(self.directory / "result-signing.pub"),
            local=LocalExecutor(self.workspace, seepient_home=self.directory / "seepient-home"),
            limits=WorkerLimitSettings(memory_mb=256, pids=64),
            session_id=session_id,
            audit=audit,
        )

    def scheduler_audit(self) -> list[dict[str, Any]]:
        log = self.state_dir / "audit.log"
        return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def make_deployment(base: Path, *, pool_size: int = 0) -> WorkerDeployment:
    """``init_deployment`` into ``base``, on a free port, with the tenant workspace owned by the worker uid."""
    root = base / "tenants"
    workspace = root / "project"
    workspace.mkdir(parents=True)
    os.chown(workspace, WORKER_UID, WORKER_UID)
    directory = base / "deploy"
    init_deployment(directory, workspace_root=root)
    register_scheduler(directory / "scheduler-state")
    port = free_port()
    scheduler = json.loads((directory / "scheduler.json").read_text())
    scheduler["listen"]["port"] = port
    scheduler["poolSize"] = pool_size
    (directory / "scheduler.json").write_text(json.dumps(scheduler, indent=2))
    control = json.loads((directory / "control-plane.json").read_text())
    control["execution"]["schedulerEndpoint"] = f"https://127.0.0.1:{port}"
    (directory / "control-plane.json").write_text(json.dumps(control, indent=2))
    return WorkerDeployment(directory, root, workspace, port)
