"""Benchmark for worker mode: dispatch latency, from the control plane's request to its verified signed result,
of the command ``true``, against a raw ``docker run --rm`` of the same image running ``true``, in the same run.

- unpooled: every dispatch creates, starts, inspects and (after answering) removes a fresh container;
- pooled: the scheduler keeps pre-created, pre-started single-use containers (``poolSize``); each serves one
  dispatch and is destroyed. Dispatches are spaced so the pool refills between them: that is the latency a
  warm container gives; a burst larger than the pool pays the unpooled price.

Targets: unpooled at most 1.2× raw, pooled under 0.5× raw. Needs root, Docker and (first time) debootstrap.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._timing import median_ms, report, sample, sample_async
from seepient.config.sections import WorkerLimitSettings
from seepient.crypto import init_deployment, load_signing_key, load_verify_key
from seepient.execution.docker_worker import DockerWorkerExecutor, client_ssl_context
from seepient.execution.local import LocalExecutor
from seepient.protocol import ActionKind, ApprovedAction, PreparedActionDraft, ShellCommand, Verdict
from seepient.scheduler.image import DEFAULT_TAG, WORKER_UID, ImageBuildError, build_worker_image

UNPOOLED_TARGET = 1.2
POOLED_TARGET = 0.5
POOL_REFILL_PAUSE_S = 1.5


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Scheduler:
    def __init__(self, base: Path, *, pool_size: int) -> None:
        root = base / "tenants"
        self.workspace = root / "project"
        self.workspace.mkdir(parents=True)
        os.chown(self.workspace, WORKER_UID, WORKER_UID)
        self.directory = base / "deploy"
        init_deployment(self.directory, workspace_root=root)
        self.port = _free_port()
        config = json.loads((self.directory / "scheduler.json").read_text())
        config["listen"]["port"] = self.port
        config["poolSize"] = pool_size
        (self.directory / "scheduler.json").write_text(json.dumps(config))
        self._log = base / "scheduler.log"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> _Scheduler:
        seepient = Path(sys.executable).parent / "seepient"
        self._process = subprocess.Popen(
            [str(seepient), "scheduler", "serve", "--config", str(self.directory / "scheduler.json")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log.open("w"),
        )
        deadline = time.monotonic() + 60
        while "listening on" not in self._log.read_text():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the scheduler did not start: {self._log.read_text()}")
            time.sleep(0.05)
        return self

    def __exit__(self, *_exc: object) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGTERM)
        self._process.wait(timeout=60)

    def executor(self) -> DockerWorkerExecutor:
        d = self.directory
        return DockerWorkerExecutor(
            workspace=self.workspace,
            endpoint=f"https://127.0.0.1:{self.port}",
            ssl_context=client_ssl_context(
                d / "ca.pem", d / "control-plane.pem", d / "control-plane-key.pem"
            ),
            signing_key=load_signing_key(d / "dispatch-signing.key"),
            result_key=load_verify_key(d / "result-signing.pub"),
            local=LocalExecutor(self.workspace, seepient_home=d / "home"),
            limits=WorkerLimitSettings(memory_mb=256, pids=64),
        )


async def _dispatch_samples(scheduler: _Scheduler, *, runs: int, pause_s: float) -> list[float]:
    executor = scheduler.executor()
    command = ShellCommand(command="true", cwd=str(scheduler.workspace), timeout_ms=30_000)
    draft = PreparedActionDraft(
        session_id="bench",
        call_id="bench",
        tool="shell",
        kind=ActionKind.SHELL,
        payload=command,
        read_only=False,
        summary="Run: true",
    )
    action = ApprovedAction(draft=draft, verdict=Verdict.allow("bench"))

    async def once() -> None:
        if pause_s:
            await asyncio.sleep(pause_s)
        started = time.perf_counter()
        outcome = await executor.execute(action)
        elapsed.append(time.perf_counter() - started)
        assert outcome.exit_code == 0, outcome

    elapsed: list[float] = []
    try:
        # The pause is outside the timed part, so the figure is the dispatch alone.
        await sample_async(once, runs=runs, warmup=2)
    finally:
        await executor.aclose()
    return elapsed[2:]


def _raw_samples(image: str, *, runs: int) -> list[float]:
    def once() -> None:
        subprocess.run(
            ["docker", "run", "--rm", "--entrypoint", "true", image], check=True, capture_output=True
        )

    return sample(once, runs=runs, warmup=2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    try:
        engine = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True
        )
        problem = engine.stderr.strip()[:200] if engine.returncode != 0 else None
    except OSError as exc:
        problem = str(exc)
    if problem is not None:
        print(f"worker benchmark skipped: no Docker engine answers ({problem})")
        return 0
    try:
        image = build_worker_image(DEFAULT_TAG, progress=lambda line: print(line, file=sys.stderr)).tag
    except ImageBuildError as exc:
        print(f"worker benchmark skipped: the worker image cannot be built here ({exc})")
        return 0
    with tempfile.TemporaryDirectory(prefix="seepient-bench-worker-") as scratch:
        base = Path(scratch)
        raw = _raw_samples(image, runs=args.runs)
        (base / "plain").mkdir()
        with _Scheduler(base / "plain", pool_size=0) as scheduler:
            unpooled = asyncio.run(_dispatch_samples(scheduler, runs=args.runs, pause_s=0))
        (base / "pooled").mkdir()
        with _Scheduler(base / "pooled", pool_size=2) as scheduler:
            pooled = asyncio.run(_dispatch_samples(scheduler, runs=args.runs, pause_s=POOL_REFILL_PAUSE_S))
        raw_again = _raw_samples(image, runs=args.runs)
    raw_all = raw + raw_again
    print(
        report(
            "worker dispatch `true`, no pool",
            unpooled,
            raw_all,
            "docker run --rm true",
            f"<= {UNPOOLED_TARGET}×",
        )
    )
    print(
        report(
            "worker dispatch `true`, pooled", pooled, raw_all, "docker run --rm true", f"< {POOLED_TARGET}×"
        )
    )
    ok = median_ms(unpooled) <= UNPOOLED_TARGET * median_ms(raw_all) and median_ms(
        pooled
    ) < POOLED_TARGET * median_ms(raw_all)
    print(f"worker targets {'met' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
