"""Write-ahead audit through a real session: the intent is on disk before the effect, an action whose intent
cannot be written never runs, intents name every file with its pre- and post-image, and the next start
finishes a killed commit, sweeps its temp files, records the action as interrupted and says so once."""

from __future__ import annotations

import hashlib
import json
import os
import signal
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from seepient.audit import AuditLog, verify_log
from seepient.audit.liveness import current_writer
from seepient.audit.record import FileImages, IntentRecord
from seepient.audit.signing import CheckpointSigner
from seepient.config import SeepientPaths
from seepient.execution.commit import expected_images
from seepient.protocol import (
    ApprovedAction,
    FileChange,
    FileChangeSet,
    PreparedActionDraft,
    ReadAction,
    ToolResult,
    Verdict,
)
from seepient.runtime import Session, SessionOptions
from seepient.tools.base import Tool, ToolContext, ToolOutput
from tests.runtime.conftest import audit_lines


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data if isinstance(data, bytes) else data.encode()).hexdigest()


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


class _PeekArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LogPeekTool(Tool[_PeekArgs]):
    """At the moment it runs, reads the audit log from disk: what a crash right then would leave."""

    name: ClassVar[str] = "log_peek"
    description: ClassVar[str] = "test"
    input_model: ClassVar[type[BaseModel]] = _PeekArgs
    read_only: ClassVar[bool] = True

    def __init__(self, log: Path) -> None:
        self.log = log
        self.seen: list[dict[str, Any]] = []

    async def prepare(self, args: _PeekArgs, ctx: ToolContext) -> PreparedActionDraft:
        return ctx.draft(
            self.name,
            payload=ReadAction(operation="glob", paths=(str(ctx.workspace),)),
            summary="peek",
        )

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        self.seen = [json.loads(line) for line in self.log.read_bytes().splitlines()]
        return ToolOutput(text="peeked")


async def test_the_intent_is_on_disk_before_the_action_runs(make_session, tmp_path):
    peek = LogPeekTool(tmp_path / "seepient-home" / "audit.log")
    session, events = make_session([_call("log_peek"), {"text": "ok"}], extra_tools=[peek])
    await session.run("x")
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert [r["type"] for r in peek.seen] == ["intent"]
    assert peek.seen[0]["action"]["digest"] == result.digest
    lines = audit_lines(session)
    assert [r["type"] for r in lines] == ["intent", "outcome"]
    assert lines[1]["action_id"] == lines[0]["action"]["id"] and lines[1]["digest"] == result.digest
    assert lines[0]["writer"]["pid"] == os.getpid() and lines[0]["workspace"] == str(session.workspace)
    await session.aclose()


async def test_an_action_whose_intent_cannot_be_written_never_runs(make_session):
    session, events = make_session(
        [_call("glob", pattern="*"), _call("write_file", path="new.txt", content="x\n"), {"text": "ok"}],
        auto_approve=True,
    )
    # After the first action (its outcome settles on the log's thread) the log's anchor disappears: the log
    # refuses to take more records.
    original = session.audit.append_settling

    def refuse_after_first(record):
        entry = original(record)
        if entry.seq == 2:
            session.audit.wait_settled()
            session.audit.anchor_path.unlink()
        return entry

    session.audit.append_settling = refuse_after_first  # type: ignore[method-assign]
    await session.run("x")
    write = [e for e in events if isinstance(e, ToolResult)][1]
    assert write.status == "error" and "could not record this action's intent" in write.output
    assert not (session.workspace / "new.txt").exists()
    await session.aclose()


async def test_intents_name_every_file_with_its_pre_and_post_image(make_session):
    session, _ = make_session(
        [
            _call("write_file", path="a.txt", content="one\ntwo\n"),
            _call("edit_file", path="a.txt", old_string="two", new_string="2"),
            _call(
                "apply_patch",
                patch="*** Begin Patch\n*** Add File: b.txt\n+bee\n*** Update File: a.txt\n@@\n-one\n+1\n"
                "*** End Patch\n",
            ),
            {"text": "ok"},
        ],
        auto_approve=True,
    )
    await session.run("x")
    intents = [r for r in audit_lines(session) if r["type"] == "intent"]
    files = [{f["path"]: f for f in intent["files"]} for intent in intents]
    assert files[0]["a.txt"]["pre_image_sha256"] is None
    assert files[0]["a.txt"]["post_image_sha256"] == _sha("one\ntwo\n")
    assert files[1]["a.txt"] == {
        "path": "a.txt",
        "pre_image_sha256": _sha("one\ntwo\n"),
        "post_image_sha256": _sha("one\n2\n"),
        "delete": False,
    }
    assert set(files[2]) == {"a.txt", "b.txt"}
    assert files[2]["a.txt"]["post_image_sha256"] == _sha((session.workspace / "a.txt").read_bytes())
    assert files[2]["b.txt"]["post_image_sha256"] == _sha((session.workspace / "b.txt").read_bytes())
    await session.aclose()


async def test_refused_actions_stay_single_records(make_session):
    session, _ = make_session(
        [_call("shell", command="cat ~/.ssh/id_rsa"), {"text": "ok"}], auto_approve=True
    )
    await session.run("x")
    assert [(r["type"], r["outcome"]["status"]) for r in audit_lines(session)] == [("action", "denied")]
    await session.aclose()


# -- the next start ---------------------------------------------------------------------------------------


def _open(workspace: Path, home: Path, tmp_path: Path) -> Session:
    script = tmp_path / "next.yaml"
    script.write_text("- text: hello\n")
    return Session.open(
        SessionOptions(workspace=workspace, model=f"replay:{script}", paths=SeepientPaths(home=home))
    )


def _killed_patch(workspace: Path, home: Path, changes: tuple[FileChange, ...], die_after: int) -> int:
    """A child process does what the pipeline does for apply_patch (intent, then the commit) and is killed
    by SIGKILL after ``die_after`` of the set's renames. Returns its pid."""
    pid = os.fork()
    if pid == 0:
        try:
            import seepient.execution.commit_set as commit_set

            draft = PreparedActionDraft(
                session_id="ses_killed",
                call_id="call_1",
                tool="apply_patch",
                kind="file_change",
                payload=FileChangeSet(changes=changes),
                read_only=False,
                summary="patch three files",
            )
            log = AuditLog(home / "audit.log", signer=CheckpointSigner(home / "keys" / "audit-signing.key"))
            log.append(
                IntentRecord(
                    surface="cli",
                    session_id="ses_killed",
                    model="replay:x",
                    action=draft,
                    verdict=Verdict.allow("test"),
                    workspace=str(workspace),
                    writer=current_writer(),
                    files=tuple(
                        FileImages(**image._asdict()) for image in expected_images(workspace, changes)
                    ),
                )
            )
            real, done = commit_set._apply_step, []

            def apply_then_die(step):
                real(step)
                done.append(step)
                if len(done) == die_after:
                    os.kill(os.getpid(), signal.SIGKILL)

            commit_set._apply_step = apply_then_die
            commit_set.commit_changes(workspace, changes)
        finally:
            os._exit(3)
    os.waitpid(pid, 0)
    return pid


async def test_the_next_start_finishes_a_killed_patch_records_it_and_says_so_once(tmp_path):
    workspace, home = tmp_path / "ws", tmp_path / "seepient-home"
    (workspace / "src").mkdir(parents=True)
    for name in ("a.py", "src/b.py", "src/c.py"):
        (workspace / name).write_text(f"old {name}\n")
    changes = tuple(
        FileChange(path=name, pre_image_sha256=_sha(f"old {name}\n"), new_content=f"new {name}\n")
        for name in ("a.py", "src/b.py", "src/c.py")
    )
    _killed_patch(workspace, home, changes, die_after=1)
    # Split: a.py is new, the other two are old; the killed process left its temp files and backups.
    assert (workspace / "a.py").read_text() == "new a.py\n" and (
        workspace / "src/b.py"
    ).read_text() == "old src/b.py\n"
    assert any(p.name.startswith(".seepient-commit-") for p in (workspace / "src").iterdir())
    report = verify_log(home / "audit.log", public_key=home / "keys" / "audit-signing.pub")
    assert report.ok and [a.state for a in report.interrupted] == ["open"]
    assert {f.path: f.state for f in report.interrupted[0].files} == {
        "a.py": "new",
        "src/b.py": "old",
        "src/c.py": "old",
    }

    session = _open(workspace, home, tmp_path)
    warnings = [str(w) for w in session.context.warnings if w.source == "audit log"]
    assert len(warnings) == 1 and "apply_patch" in warnings[0] and "was interrupted" in warnings[0]
    await session.aclose()
    for name in ("a.py", "src/b.py", "src/c.py"):
        assert (workspace / name).read_text() == f"new {name}\n"
    leftovers = [p for p in workspace.rglob(".seepient-commit-*")]
    assert leftovers == []
    report = verify_log(home / "audit.log", public_key=home / "keys" / "audit-signing.pub")
    assert report.ok and report.signature == "valid"
    (closed,) = report.interrupted
    assert closed.state == "closed" and closed.closed_by == session.id
    assert {f.state for f in closed.files} == {"new"}

    again = _open(workspace, home, tmp_path)
    assert [w for w in again.context.warnings if w.source == "audit log"] == []
    await again.aclose()


async def test_another_projects_interrupted_action_waits_for_a_session_there(tmp_path):
    home = tmp_path / "seepient-home"
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    (theirs / "src").mkdir(parents=True)
    for name in ("a.py", "src/b.py"):
        (theirs / name).write_text(f"old {name}\n")
    changes = tuple(
        FileChange(path=name, pre_image_sha256=_sha(f"old {name}\n"), new_content=f"new {name}\n")
        for name in ("a.py", "src/b.py")
    )
    _killed_patch(theirs, home, changes, die_after=1)
    session = _open(mine, home, tmp_path)
    assert [w for w in session.context.warnings if w.source == "audit log"] == []
    await session.aclose()
    assert (theirs / "src/b.py").read_text() == "old src/b.py\n"  # not touched from another project
    there = _open(theirs, home, tmp_path)
    assert len([w for w in there.context.warnings if w.source == "audit log"]) == 1
    await there.aclose()
    assert (theirs / "src/b.py").read_text() == "new src/b.py\n"
