"""``seepient run``'s recorder: a standing grant given in one run is stored with the session and covers the same
kind of action in the run that resumes it, where no one is there to ask."""

from __future__ import annotations

from pathlib import Path

from seepient.config import SeepientPaths
from seepient.protocol import ApprovalDecision
from seepient.runtime import Session, SessionOptions
from seepient.surfaces.cli.run_sessions import RunRecorder, find_resumable
from tests.support.approver import Answer, ScriptedApprover
from tests.support.scripts import write_script


def _write(path: str) -> dict:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": "x = 1\n"}}]}


async def test_a_session_grant_is_stored_and_covers_the_resumed_run(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    (ws / "pkg").mkdir(parents=True)
    script = write_script(
        tmp_path / "script.yaml", [_write("pkg/a.py"), {"text": "one"}, _write("pkg/b.py"), {"text": "two"}]
    )
    paths = SeepientPaths(home=home)
    recorder = RunRecorder(home)
    approver = ScriptedApprover(Answer(ApprovalDecision.APPROVE_SESSION, scope="directory"))
    first = Session.open(
        SessionOptions(
            workspace=ws,
            model=f"replay:{script}",
            paths=paths,
            approver=approver,
            on_grant=recorder.on_grant,
            surface="cli",
        )
    )
    await recorder.start(first)
    try:
        assert (await first.run("write a")).reason == "final"
    finally:
        await first.aclose()
        await recorder.aclose()
    assert (ws / "pkg" / "a.py").exists() and len(approver.asked) == 1

    resumed = await find_resumable(home, ws.resolve(), resume_id=None)
    assert resumed.session_id == first.id and resumed.turns == 1
    assert [kind for kind, _ in resumed.grants] == ["scope"]
    # Headless (no approver, no -y): only the restored grant can approve the second write.
    second = Session.open(
        SessionOptions(
            workspace=ws,
            model=f"replay:{script}",
            paths=paths,
            surface="cli",
            session_id=resumed.session_id,
            history=resumed.history,
            grants=resumed.grants,
            resumed=True,
        )
    )
    events: list = []
    second.subscribe(events.append)
    try:
        assert (await second.run("write b")).text == "two"
    finally:
        await second.aclose()
    assert (ws / "pkg" / "b.py").read_text() == "x = 1\n"
    (resolved,) = [e for e in events if e.type == "permission_resolved"]
    assert resolved.response.approved_by == "grant:session"


async def test_without_the_stored_grant_the_resumed_run_refuses(tmp_path: Path) -> None:
    """The counterpart: the same resumed write, without the grant, is refused headless (so the test above
    measures the grant, not a lenient policy)."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    (ws / "pkg").mkdir(parents=True)
    script = write_script(tmp_path / "script.yaml", [_write("pkg/b.py"), {"text": "two"}])
    session = Session.open(
        SessionOptions(workspace=ws, model=f"replay:{script}", paths=SeepientPaths(home=home), surface="cli")
    )
    try:
        await session.run("write b")
    finally:
        await session.aclose()
    assert not (ws / "pkg" / "b.py").exists()


async def test_the_recorder_creates_a_new_home_database_and_then_writes_on_sqlite3(tmp_path: Path) -> None:
    from seepient.store.session_writes import SqliteSessionWrites
    from seepient.surfaces.stored_sessions import SessionLog, open_recorder

    home, ws = tmp_path / "home", tmp_path / "ws"
    for folder in (home, ws):
        folder.mkdir()
    for run in range(2):  # the first run creates the database (on a thread of its own), the second finds it
        recorder = await open_recorder(home, ws)
        assert isinstance(recorder._writes, SqliteSessionWrites)
        await recorder.turn_started(
            session_id=f"s{run}", model="m", mode="auto", turn_id=f"t{run}", prompt="hi"
        )
        await recorder.turn_ended(
            session_id=f"s{run}", turn_id=f"t{run}", reason="final", reply="ok", messages=[]
        )
        await recorder.aclose()
    log = await SessionLog.open(home, ws)
    try:
        assert sorted(s.id for s in await log.recent()) == ["s0", "s1"]
    finally:
        await log.aclose()
