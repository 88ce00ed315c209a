"""Background processes through the real LocalExecutor and bubblewrap: incremental output, bounded buffers,
ownership, whole-group kills, limits, and no survivor after the session or the Seepient process ends."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from seepient.execution.background import BackgroundProcesses, _RingBuffer
from seepient.execution.local import LocalExecutor
from seepient.protocol import ShellCommand
from seepient.protocol.outcomes import BackgroundOutput
from seepient.protocol.refusals import BackgroundRefused
from tests.approved import background_output, kill_background, start_background
from tests.execution.exec_helpers import (
    SECRET_ENV,
    pids_with_argv,
    unique_sleep_seconds,
    wait_for_pids,
    wait_until_gone,
)

SESSION = "ses_owner"


def _command(workspace: Path, line: str, timeout_ms: int = 0) -> ShellCommand:
    return ShellCommand(command=line, cwd=str(workspace), timeout_ms=timeout_ms, background=True)


async def _until_ended(
    executor: LocalExecutor, process_id: str, deadline_s: float = 15.0
) -> BackgroundOutput:
    """Poll until the process has ended; the reads in between are concatenated into the returned output."""
    stdout, stderr = "", ""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        out = await background_output(executor, process_id, session_id=SESSION)
        stdout, stderr = stdout + out.stdout, stderr + out.stderr
        if not out.running:
            return out.model_copy(update={"stdout": stdout, "stderr": stderr})
        await asyncio.sleep(0.05)
    raise AssertionError(f"{process_id} did not end within {deadline_s} s")


@pytest.fixture
async def bg_executor(executor: LocalExecutor):  # type: ignore[no-untyped-def]
    yield executor
    await executor.aclose()


async def test_output_is_read_incrementally_and_the_exit_status_arrives_once_it_ends(
    bg_executor: LocalExecutor, workspace: Path
) -> None:
    line = "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second; echo late >&2; exit 7"
    started = await start_background(bg_executor, _command(workspace, line), session_id=SESSION)
    assert started.process_id.startswith("bg_") and started.sandbox == "bwrap"
    seen = ""
    for _ in range(300):
        out = await background_output(bg_executor, started.process_id, session_id=SESSION)
        seen += out.stdout
        if "first" in seen:
            break
        await asyncio.sleep(0.02)
    assert seen == "first\n" and out.running and out.exit_code is None
    (workspace / "go").touch()
    final = await _until_ended(bg_executor, started.process_id)
    assert final.stdout == "second\n"  # "first" was already read and is not repeated
    assert final.stderr == "late\n"
    assert final.exit_code == 7 and final.ended_by is None
    again = await background_output(bg_executor, started.process_id, session_id=SESSION)
    assert again.stdout == "" and again.exit_code == 7 and not again.running


async def test_the_buffer_keeps_the_newest_output_and_counts_what_it_dropped(
    make_executor: Callable[..., LocalExecutor], workspace: Path
) -> None:
    background = BackgroundProcesses(buffer_bytes=50_000, read_bytes=10_000)
    executor = make_executor(background=background)
    try:
        line = "head -c 199999 /dev/zero | tr '\\0' a; echo END"
        started = await start_background(executor, _command(workspace, line), session_id=SESSION)
        # Wait for the end without reading, so everything but the newest 50 000 bytes falls out of the ring.
        watcher = background._entries[started.process_id].watcher  # noqa: SLF001
        assert watcher is not None
        await asyncio.wait_for(watcher, 15)
        out = await background_output(executor, started.process_id, session_id=SESSION)
    finally:
        await executor.aclose()
    assert not out.running and out.exit_code == 0
    assert out.stdout.endswith("aEND\n") and len(out.stdout) == 10_000
    assert out.stdout_dropped == 200_003 - 10_000


def test_ring_buffer_counts_bytes_lost_between_reads_and_keeps_split_characters_whole() -> None:
    ring = _RingBuffer(cap=8)
    ring.feed(b"0123456789")
    assert ring.take(100, final=False) == ("23456789", 2)
    ring.feed("é".encode()[:1])
    assert ring.take(100, final=False) == ("", 0)  # half a character waits for its other half
    ring.feed("é".encode()[1:] + b"x")
    assert ring.take(100, final=False) == ("éx", 0)
    assert ring.take(100, final=True) == ("", 0)


async def test_only_the_starting_session_can_read_or_kill_and_ids_cannot_be_guessed(
    bg_executor: LocalExecutor, workspace: Path
) -> None:
    sleep = unique_sleep_seconds()
    started = await start_background(bg_executor, _command(workspace, f"sleep {sleep}"), session_id=SESSION)
    pids = wait_for_pids("sleep", sleep)
    for process_id, session in (
        (started.process_id, "ses_someone_else"),  # another session's process
        ("bg_00000000000000000000", SESSION),  # a made-up id
        (str(pids[0]), SESSION),  # a PID number
        (str(os.getpid()), SESSION),
    ):
        with pytest.raises(BackgroundRefused, match="no background process"):
            await kill_background(bg_executor, process_id, session_id=session)
        with pytest.raises(BackgroundRefused, match="no background process"):
            await background_output(bg_executor, process_id, session_id=session)
    assert pids_with_argv("sleep", sleep) == pids  # nothing was killed by the refused requests
    killed = await kill_background(bg_executor, started.process_id, session_id=SESSION)
    assert not killed.running and killed.ended_by == "kill"
    assert wait_until_gone(pids) == []


async def test_kill_reaches_every_descendant_even_one_that_left_the_process_group(
    bg_executor: LocalExecutor, workspace: Path
) -> None:
    escaped, child = unique_sleep_seconds(), unique_sleep_seconds()
    line = f"setsid sleep {escaped} & sleep {child} & wait"
    started = await start_background(bg_executor, _command(workspace, line), session_id=SESSION)
    pids = wait_for_pids("sleep", escaped) + wait_for_pids("sleep", child)
    await kill_background(bg_executor, started.process_id, session_id=SESSION)
    assert wait_until_gone(pids) == []


async def test_the_number_of_running_processes_is_bounded(
    make_executor: Callable[..., LocalExecutor], workspace: Path
) -> None:
    executor = make_executor(background=BackgroundProcesses(max_running=2))
    try:
        first = await start_background(executor, _command(workspace, "sleep 60"), session_id=SESSION)
        await start_background(executor, _command(workspace, "sleep 60"), session_id=SESSION)
        with pytest.raises(BackgroundRefused, match="the limit of 2 background processes is reached"):
            await start_background(executor, _command(workspace, "sleep 60"), session_id=SESSION)
        await kill_background(executor, first.process_id, session_id=SESSION)
        third = await start_background(executor, _command(workspace, "sleep 60"), session_id=SESSION)
        assert third.process_id.startswith("bg_")
    finally:
        await executor.aclose()


async def test_a_lifetime_limit_kills_the_process(bg_executor: LocalExecutor, workspace: Path) -> None:
    started = await start_background(
        bg_executor, _command(workspace, "echo up; sleep 60", timeout_ms=300), session_id=SESSION
    )
    final = await _until_ended(bg_executor, started.process_id)
    assert final.ended_by == "timeout" and final.stdout == "up\n"
    assert final.runtime_ms < 10_000


async def test_background_commands_get_the_same_jail_as_foreground_ones(
    bg_executor: LocalExecutor, workspace: Path, outside_dir: Path, fake_home: Path
) -> None:
    target = outside_dir / "pwned"
    names = " ".join(f"${name}" for name in SECRET_ENV)
    line = (
        f'echo "env:[{names}]"; echo x > {target}; cat {fake_home}/.ssh/id_rsa; '
        "(exec 3<>/dev/tcp/1.1.1.1/53) 2>&1 | tail -1"
    )
    started = await start_background(bg_executor, _command(workspace, line), session_id=SESSION)
    final = await _until_ended(bg_executor, started.process_id)
    assert "env:[    ]" in final.stdout
    assert not any(value in final.stdout + final.stderr for value in SECRET_ENV.values())
    assert not target.exists()
    assert "PRIVATE-KEY" not in final.stdout
    assert "network is unreachable" in final.stdout.lower()


async def test_closing_the_executor_kills_what_is_still_running(
    executor: LocalExecutor, workspace: Path
) -> None:
    sleep = unique_sleep_seconds()
    started = await start_background(executor, _command(workspace, f"sleep {sleep}"), session_id=SESSION)
    pids = wait_for_pids("sleep", sleep)
    await executor.aclose()
    assert wait_until_gone(pids) == []
    out = await background_output(executor, started.process_id, session_id=SESSION)
    assert out.ended_by == "session_end"
    with pytest.raises(BackgroundRefused, match="closing"):
        await start_background(executor, _command(workspace, "true"), session_id=SESSION)


_CRASHING_PARENT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from seepient.execution.local import LocalExecutor
    from seepient.protocol import ActionKind, ApprovedAction, PreparedActionDraft, ShellCommand, Verdict

    async def main():
        workspace, home, line = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
        executor = LocalExecutor(workspace, seepient_home=home / ".seepient", home=home)
        command = ShellCommand(command=line, cwd=str(workspace), timeout_ms=0, background=True)
        draft = PreparedActionDraft(
            session_id="ses_crash", call_id="c", tool="shell", kind=ActionKind.SHELL, payload=command,
            read_only=False, summary="background",
        )
        await executor.execute(ApprovedAction(draft=draft, verdict=Verdict.allow("test")))
        print("started", flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


def test_a_crashed_seepient_process_leaves_no_background_process_behind(
    workspace: Path, fake_home: Path
) -> None:
    sleep = unique_sleep_seconds()
    # The parent runs on the host (it plays Seepient); only the background command is sandboxed.
    parent = subprocess.Popen(
        [sys.executable, "-c", _CRASHING_PARENT, str(workspace), str(fake_home), f"sleep {sleep}"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "started"
        pids = wait_for_pids("sleep", sleep)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert wait_until_gone(pids) == []
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
