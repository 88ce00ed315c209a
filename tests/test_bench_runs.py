"""Every benchmark still runs against the code as it is: each is started with the fewest samples it takes
(no figure is checked here; `bench/run` prints them). A benchmark that calls a function whose signature has
moved on fails here rather than halfway through `bench/run`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

# The ones a few samples make quick; the server's and the worker's need their whole setup (200 sessions, a
# docker image) and run in bench/run only, so only their modules are loaded here.
_QUICK = {
    "bench.context": ["--runs", "2"],
    "bench.net": ["--runs", "5"],
    "bench.models": ["--runs", "1", "--tokens", "50"],
    "bench.policy": ["--count", "50"],
    "bench.tools": ["--runs", "1"],
    "bench.spine": ["--runs", "2"],
    "bench.run_path": ["--runs", "1"],
}


@pytest.mark.parametrize("module", sorted(_QUICK))
def test_the_benchmark_runs(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", module, *_QUICK[module]], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "a benchmark prints its figures"


@pytest.mark.parametrize("module", ["bench.server", "bench.tui", "bench.worker", "bench._step_driver"])
def test_the_slow_benchmarks_load(module: str) -> None:
    code = f"import importlib; importlib.import_module({module!r})"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
