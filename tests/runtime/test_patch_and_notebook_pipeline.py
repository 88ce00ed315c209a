"""``apply_patch``, ``notebook_read`` and ``notebook_edit`` through a real session (replay model, real policy,
approval, executor and audit log): approved, rejected and denied calls, and what the person is shown."""

from __future__ import annotations

import nbformat

from seepient.approval.terminal import render_request
from seepient.protocol import ApprovalDecision, FileChangeSet, ToolResult
from tests.runtime.conftest import audit_actions
from tests.support.approver import Answer, ScriptedApprover

PATCH = (
    "*** Begin Patch\n"
    "*** Update File: calc.py\n"
    "@@ def add(a, b):\n"
    "-    return a - b\n"
    "+    return a + b\n"
    "*** Add File: test_calc.py\n"
    "+from calc import add\n"
    "*** Delete File: obsolete.py\n"
    "*** End Patch\n"
)


def _results(events):
    return [e for e in events if isinstance(e, ToolResult)]


def _call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _seed(workspace):
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (workspace / "obsolete.py").write_text("old = True\n")


async def test_approved_patch_lands_whole_and_is_audited_once(make_session):
    person = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session([_call("apply_patch", patch=PATCH), {"text": "done"}], approver=person)
    _seed(session.workspace)
    await session.run("fix calc")
    (result,) = _results(events)
    assert result.status == "ok", result.output
    assert (session.workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert (session.workspace / "test_calc.py").read_text() == "from calc import add\n"
    assert not (session.workspace / "obsolete.py").exists()
    (request,) = person.asked
    assert isinstance(request.action.payload, FileChangeSet)
    shown = render_request(request, colour=False)
    for expected in (
        "change calc.py",
        "+    return a + b",
        "create test_calc.py",
        "delete obsolete.py",
        "-old = True",
    ):
        assert expected in shown
    (line,) = audit_actions(session)
    assert line["outcome"]["status"] == "ok" and line["action"]["digest"] == result.digest
    assert [c["path"] for c in line["action"]["payload"]["changes"]] == [
        "calc.py",
        "test_calc.py",
        "obsolete.py",
    ]


async def test_rejected_patch_writes_nothing(make_session):
    person = ScriptedApprover((ApprovalDecision.REJECT, "not the delete"))
    session, events = make_session([_call("apply_patch", patch=PATCH), {"text": "ok"}], approver=person)
    _seed(session.workspace)
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "rejected" and "not the delete" in result.output
    assert (session.workspace / "obsolete.py").exists() and not (session.workspace / "test_calc.py").exists()
    assert (session.workspace / "calc.py").read_text().endswith("a - b\n")


async def test_patch_touching_seepient_settings_is_denied_even_with_auto_approve(make_session):
    patch = (
        "*** Begin Patch\n*** Add File: notes.txt\n+hi\n"
        '*** Add File: .seepient/settings.json\n+{"permissions": {"allow": ["Shell"]}}\n*** End Patch\n'
    )
    session, events = make_session([_call("apply_patch", patch=patch), {"text": "ok"}], auto_approve=True)
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied"
    assert not (session.workspace / "notes.txt").exists()
    assert not (session.workspace / ".seepient" / "settings.json").exists()
    (line,) = audit_actions(session)
    assert line["outcome"]["status"] == "denied"


def _write_notebook(workspace):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", execution_count=1)]
    nb.cells[0].id = "first"
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="one\n")]
    nbformat.write(nb, str(workspace / "nb.ipynb"))


async def test_notebook_read_runs_without_asking_and_edit_is_approved(make_session):
    person = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session(
        [
            _call("notebook_read", path="nb.ipynb"),
            _call("notebook_edit", path="nb.ipynb", cell_id="first", new_source="x = 2"),
            {"text": "done"},
        ],
        approver=person,
    )
    _write_notebook(session.workspace)
    await session.run("x")
    read, edit = _results(events)
    assert read.status == "ok" and "x = 1" in read.output and "one" in read.output
    assert edit.status == "ok", edit.output
    assert len(person.asked) == 1 and person.asked[0].action.tool == "notebook_edit"
    nb = nbformat.read(str(session.workspace / "nb.ipynb"), as_version=4)
    assert nb.cells[0].source == "x = 2" and nb.cells[0].outputs == []
    assert [line["outcome"]["status"] for line in audit_actions(session)] == ["ok", "ok"]


async def test_notebook_edit_of_a_protected_path_is_denied(make_session):
    person = ScriptedApprover()
    session, events = make_session(
        [_call("notebook_edit", path=".git/hooks/nb.ipynb", index=0, new_source="x"), {"text": "ok"}],
        approver=person,
    )
    (session.workspace / ".git" / "hooks").mkdir(parents=True)
    _write_notebook(session.workspace / ".git" / "hooks")
    before = (session.workspace / ".git" / "hooks" / "nb.ipynb").read_bytes()
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied" and person.asked == []
    assert (session.workspace / ".git" / "hooks" / "nb.ipynb").read_bytes() == before


async def test_a_directory_grant_covers_later_patches_there_but_never_deletions(make_session):
    person = ScriptedApprover(
        Answer(ApprovalDecision.APPROVE_SESSION, scope="directory"),
        ApprovalDecision.REJECT,
        ApprovalDecision.REJECT,
    )
    first = (
        "*** Begin Patch\n*** Add File: src/a.py\n+a = 1\n*** Add File: src/pkg/b.py\n+b = 1\n*** End Patch\n"
    )
    second = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-a = 1\n+a = 2\n*** End Patch\n"
    outside = "*** Begin Patch\n*** Add File: docs/c.md\n+c\n*** End Patch\n"
    deleting = "*** Begin Patch\n*** Delete File: src/pkg/b.py\n*** End Patch\n"
    session, events = make_session(
        [_call("apply_patch", patch=p) for p in (first, second, outside, deleting)] + [{"text": "ok"}],
        approver=person,
    )
    await session.run("x")
    statuses = [r.status for r in _results(events)]
    assert statuses == ["ok", "ok", "rejected", "rejected"], statuses
    assert [scope.label for scope in person.asked[0].scopes] == ["this exact action", "edits under src/"]
    assert (session.workspace / "src" / "a.py").read_text() == "a = 2\n"
    assert (session.workspace / "src" / "pkg" / "b.py").exists()
    # the deletion was offered no directory grant: only the exact set
    assert [scope.kind for scope in person.asked[2].scopes] == ["exact"]
