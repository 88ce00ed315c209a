"""``run_process``: exit codes, capped output, the deadline and cancellation killing the whole group, and a
descendant that left the group not holding the call up. Each case runs both ways a child is watched (the
event loop watching its pipes and a pidfd, and asyncio's subprocess transports), which must agree."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from seepient.execution import process
from seepient.execution.process import run_process
from tests.support.processes import process_alive

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


@pytest.fixture(params=["pidfd", "asyncio"])
def watcher(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "pidfd":
        # Off CI only: every kernel CI runs on has pidfd_open (Linux 5.3+), so there the pidfd way must run.
        if not process._PIDFD_WORKS and os.environ.get("CI") != "true":
            pytest.skip("this kernel has no pidfd_open (Linux 5.3 and later have it)")
    else:
        monkeypatch.setattr(process, "_PIDFD_WORKS", False)
    yield request.param


def _wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return True
        time.sleep(0.02)
    return False


async def test_output_and_exit_code(watcher: str) -> None:
    result = await run_process(["sh", "-c", "printf out; printf err >&2; exit 3"], env=ENV)
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out", "err")
    assert not result.timed_out and not result.stdout_truncated and not result.stderr_truncated


async def test_a_signal_is_a_negative_exit_code(watcher: str) -> None:
    result = await run_process(["sh", "-c", "kill -TERM $$"], env=ENV)
    assert result.exit_code == -signal.SIGTERM


async def test_cwd_and_environment(watcher: str, tmp_path: Path) -> None:
    result = await run_process(["sh", "-c", 'pwd; echo "$ONLY"'], env={**ENV, "ONLY": "this"}, cwd=tmp_path)
    assert result.stdout.splitlines() == [str(tmp_path.resolve()), "this"]


async def test_output_past_the_cap_is_cut_and_still_drained(watcher: str) -> None:
    # Far more than a pipe holds: the child would block forever if reading stopped at the cap.
    result = await run_process(
        [sys.executable, "-c", "import sys; sys.stdout.write('x' * 3_000_000)"],
        env=ENV,
        max_output_bytes=1000,
    )
    assert result.exit_code == 0
    assert result.stdout == "x" * 1000 and result.stdout_truncated


async def test_stdin_is_empty_or_fed(watcher: str) -> None:
    assert (await run_process(["cat"], env=ENV)).stdout == ""
    assert (await run_process(["cat"], env=ENV, stdin=b"fed\n")).stdout == "fed\n"


async def test_a_missing_program_raises(watcher: str) -> None:
    with pytest.raises(FileNotFoundError):
        await run_process(["/nonexistent/program"], env=ENV)


async def test_the_deadline_kills_the_group(watcher: str, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    result = await run_process(["sh", "-c", f"sleep 30 & echo $! > {pid_file}; wait"], env=ENV, timeout_s=0.5)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 10
    assert _wait_gone(int(pid_file.read_text()))


async def test_cancelling_kills_the_group(watcher: str, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    task = asyncio.ensure_future(run_process(["sh", "-c", f"sleep 30 & echo $! > {pid_file}; wait"], env=ENV))
    while not pid_file.exists() or not pid_file.read_text().strip():
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _wait_gone(int(pid_file.read_text()))


async def test_a_background_child_left_in_the_group_is_killed(watcher: str, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    result = await run_process(
        ["sh", "-c", f"sleep 30 >/dev/null 2>&1 & echo $! > {pid_file}"], env=ENV, timeout_s=10
    )
    assert result.exit_code == 0 and not result.timed_out
    assert _wait_gone(int(pid_file.read_text()))


async def test_a_descendant_that_left_the_group_does_not_hold_the_call_past_its_deadline(
    tmp_path: Path,
) -> None:
    # setsid puts the sleeper beyond the group's kill while it keeps the output pipes open: the call ends a
    # bounded drain after its deadline, not when the sleeper does. The pidfd way only, the one every step
    # takes on Linux: the asyncio way gives up its pipe transports unclosed here, which asyncio warns about
    # once the loop is gone.
    assert process._PIDFD_WORKS, "this kernel has no pidfd_open (Linux 5.3 and later have it)"
    pid_file = tmp_path / "sleeper.pid"
    code = (
        "import pathlib, subprocess\n"
        "sleeper = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(sleeper.pid))\n"
    )
    result = await run_process([sys.executable, "-c", code], env=ENV, timeout_s=0.5)
    sleeper = int(pid_file.read_text())
    try:
        assert result.timed_out
        os.kill(sleeper, 0)  # raises if it ended: the call returned while the sleeper still held the pipes
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(sleeper, signal.SIGKILL)


async def test_inherited_streams_capture_nothing(watcher: str) -> None:
    result = await run_process(["sh", "-c", "exit 4"], env=ENV, stdio="inherit")
    assert (result.exit_code, result.stdout, result.stderr) == (4, "", "")


async def test_no_descriptor_is_left_open(watcher: str) -> None:
    before = set(os.listdir("/proc/self/fd"))
    for _ in range(5):
        await run_process(["true"], env=ENV)
    assert set(os.listdir("/proc/self/fd")) <= before


def test_a_result_reports_every_field_it_has_as_the_shell_outcome():
    import dataclasses

    from seepient.execution.process import ProcessResult

    result = ProcessResult(
        exit_code=-9,
        stdout="out é",
        stderr="err",
        timed_out=True,
        stdout_truncated=True,
        stderr_truncated=True,
        duration_ms=1234,
    )
    outcome = result.shell_outcome("bwrap-test").model_dump()
    assert {field.name: outcome[field.name] for field in dataclasses.fields(result)} == dataclasses.asdict(
        result
    )
    assert outcome["sandbox"] == "bwrap-test"
