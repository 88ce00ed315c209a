"""A shell call the model starts gets its jail set up while it streams and waits for approval: through a real
Session, the standby jail is there when the person is asked, runs nothing when they refuse, is what the
approved command runs in, and ends with the session; a call of a tool that runs no command sets none up."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from seepient.protocol import ApprovalDecision, ApprovalRequest, ApprovalResponse, ToolResult
from tests.support.approver import ScriptedApprover


def _standby_jails(workspace: Path) -> set[int]:
    """The standby jails of ``workspace`` waiting now (bubblewrap, whose command line holds the trampoline's
    array name and the workspace it binds)."""
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            argv[0].endswith(b"bwrap")
            and os.fsencode(workspace) in argv
            and any(b"SEEPIENT_STANDBY" in word for word in argv)
        ):
            found.add(int(entry))
    # bubblewrap forks its namespaces' init, which shows the same command line: count each jail once.
    return {pid for pid in found if _parent(pid) not in found}


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


class _LookingApprover(ScriptedApprover):
    """Notes the standby jails of the workspace at the moment it is asked."""

    def __init__(self, workspace: Path, *answers: Any) -> None:
        super().__init__(*answers)
        self.workspace = workspace
        self.seen: list[set[int]] = []

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse:
        self.seen.append(_standby_jails(self.workspace))
        return await super().decide(request)


def _shell(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


async def test_the_jail_is_set_up_before_the_person_is_asked_and_a_refusal_runs_nothing_in_it(
    make_session: Any, tmp_path: Path
) -> None:
    workspace = (tmp_path / "ws").resolve()
    person = _LookingApprover(workspace, (ApprovalDecision.REJECT, "no"))
    session, events = make_session([_shell("touch planted"), {"text": "ok"}], approver=person)
    try:
        await session.run("go")
        (seen,) = person.seen
        assert len(seen) == 1  # set up while the call streamed, before anyone approved it
        assert [e.status for e in events if isinstance(e, ToolResult)] == ["rejected"]
        assert not (workspace / "planted").exists()
        assert _standby_jails(workspace) == seen  # still waiting, having run nothing
    finally:
        await session.aclose()
    assert not _standby_jails(workspace)  # the session's end killed it


async def test_the_approved_command_runs_in_the_jail_set_up_for_it(make_session: Any, tmp_path: Path) -> None:
    workspace = (tmp_path / "ws").resolve()
    person = _LookingApprover(workspace, ApprovalDecision.APPROVE_ONCE)
    session, events = make_session([_shell("touch made"), {"text": "ok"}], approver=person)
    try:
        await session.run("go")
        ((early,),) = person.seen
        assert [e.status for e in events if isinstance(e, ToolResult)] == ["ok"]
        assert (workspace / "made").exists()
        # The early jail was used (it is gone) and a fresh one waits for the next command.
        assert early not in _standby_jails(workspace)
        assert len(_standby_jails(workspace)) == 1
    finally:
        await session.aclose()


async def test_a_call_of_a_tool_that_runs_no_command_sets_no_jail_up(
    make_session: Any, tmp_path: Path
) -> None:
    workspace = (tmp_path / "ws").resolve()
    (workspace / "notes.txt").write_text("x\n")
    session, events = make_session(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}, {"text": "ok"}]
    )
    try:
        await session.run("go")
        assert [e.status for e in events if isinstance(e, ToolResult)] == ["ok"]
        assert not _standby_jails(workspace)
    finally:
        await session.aclose()
