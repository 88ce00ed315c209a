"""Where the control guard's bracket runs: in a thread until a scan of the workspace has been timed, then on the
event loop while scans stay quick, and in a thread again once one is slow; wherever it runs, what a command
plants for programs on the host is undone before its result comes back."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from seepient.execution import jailed_commands
from seepient.execution.control_guard import ControlGuard
from seepient.execution.local import LocalExecutor
from seepient.execution.sandbox.bwrap import BwrapSandbox
from seepient.protocol import ShellCommand
from tests.approved import run_shell


@pytest.fixture(autouse=True)
def _bwrap_works() -> None:
    status = BwrapSandbox().probe()
    assert status.available, f"these tests need a working bubblewrap: {status.message}"


async def test_the_guard_moves_to_the_loop_while_quick_and_back_to_a_thread_when_slow(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executor = LocalExecutor(workspace, seepient_home=workspace.parent / "home")
    steps: list[list[str]] = []
    slow = False
    snapshot = ControlGuard.snapshot

    def watched(self: ControlGuard):  # type: ignore[no-untyped-def]
        steps[-1].append("loop" if threading.current_thread() is threading.main_thread() else "thread")
        if slow:
            time.sleep(jailed_commands._INLINE_GUARD_S * 2)
        return snapshot(self)

    monkeypatch.setattr(ControlGuard, "snapshot", watched)
    # What counts as quick is raised well above what a real scan takes on a busy machine (where one went past the
    # 2 ms of the real limit and the "quick" steps ran in a thread); the slow step sleeps past it.
    monkeypatch.setattr(jailed_commands, "_INLINE_GUARD_S", 0.25)
    # direnv runs a workspace's .envrc on the host when the user next enters the folder.
    plant = "echo 'touch /tmp/pwned' > .envrc"

    async def step() -> str:
        steps.append([])
        outcome = await run_shell(
            executor, ShellCommand(command=plant, cwd=str(workspace), timeout_ms=60_000)
        )
        assert outcome.exit_code == 0, outcome.stderr
        assert not (workspace / ".envrc").exists(), "the planted .envrc stayed"
        return outcome.stderr

    for _ in range(2):
        assert ".envrc" in await step()
    slow = True
    await step()  # its own scans still run on the loop: this one is the first found slow
    slow = False
    await step()
    await executor.aclose()
    # Each step's bracket (a snapshot before, a repair after) runs where the last scan's time sent it: the first
    # in a thread; on the loop once one was quick; after the slow one in a thread again until a quick one.
    first, quick, made_slow, after_slow = steps
    assert first[0] == "thread" and first[-1] == "loop", first
    assert set(quick) == {"loop"}, quick
    assert made_slow[0] == "loop" and made_slow[-1] == "thread", made_slow
    assert after_slow[0] == "thread" and after_slow[-1] == "loop", after_slow
