"""Hooks through a real session: command hooks from the user's settings and SDK callables block, modify (and
the changed call goes through policy and approval again), pass, fail closed on crashes, bad answers and
deadlines, and cannot be planted by a project or by the model."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from seepient.protocol import ApprovalDecision, ErrorEvent, PermissionRequest, ToolResult, TurnCompleted
from seepient.runtime.hooks import MAX_STOP_CONTINUATIONS, FunctionHook
from tests.execution.exec_helpers import wait_until_gone
from tests.runtime.conftest import audit_actions
from tests.support.approver import ScriptedApprover

PY = sys.executable


def _results(events: list[Any]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.fixture
def hooks_dir(tmp_path: Path) -> Path:
    """Where the user keeps hook programs: outside the workspace, as the runner requires."""
    folder = tmp_path / "user-hooks"
    folder.mkdir()
    return folder


def _hook_program(folder: Path, name: str, body: str) -> str:
    """A Python hook program; its input dict is ``data``; it prints its answer. Returns the command line."""
    script = folder / f"{name}.py"
    script.write_text(
        "import json, os, sys\n"
        "data = json.load(sys.stdin)\n"
        f"log = {str(folder / (name + '.log'))!r}\n"
        "open(log, 'a').write(json.dumps(data) + '\\n')\n" + body
    )
    return f"{PY} {script}"


def _write_user_hooks(tmp_path: Path, hooks: dict[str, Any], **extra: Any) -> None:
    home = tmp_path / "seepient-home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"hooks": hooks, **extra}))


def _hook_inputs(folder: Path, name: str) -> list[dict[str, Any]]:
    log = folder / f"{name}.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# -- preToolUse: block, pass, modify ----------------------------------------------------------------------


async def test_a_blocking_pre_hook_refuses_the_call_and_the_refusal_is_audited(
    make_session, tmp_path, hooks_dir
):
    command = _hook_program(
        hooks_dir, "guard", "print(json.dumps({'decision': 'block', 'reason': 'no shell on Fridays'}))\n"
    )
    _write_user_hooks(tmp_path, {"preToolUse": [{"matcher": "shell|edit_file", "command": command}]})
    marker = tmp_path / "ws" / "ran.txt"
    session, events = make_session(
        [_call("shell", command=f"touch {marker}"), {"text": "ok"}], auto_approve=True
    )
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied" and "no shell on Fridays" in result.output
    assert not marker.exists()
    (seen,) = _hook_inputs(hooks_dir, "guard")
    assert seen["event"] == "preToolUse" and seen["tool"] == "shell"
    assert seen["arguments"] == {"command": f"touch {marker}"} and seen["session_id"] == session.id
    (line,) = audit_actions(session)
    assert line["type"] == "call_refused" and line["verdict"]["rule"] == "hook:preToolUse"


async def test_the_matcher_selects_tools_and_a_passing_hook_lets_the_call_run(
    make_session, tmp_path, hooks_dir
):
    passing = _hook_program(hooks_dir, "pass", "")  # empty stdout and exit 0: pass
    blocking = _hook_program(hooks_dir, "never", "print(json.dumps({'decision': 'block', 'reason': 'x'}))\n")
    _write_user_hooks(
        tmp_path,
        {
            "preToolUse": [
                {"matcher": "read_file", "command": passing},
                {"matcher": "edit", "command": blocking},  # matches the whole name only: not edit_file
            ]
        },
    )
    (tmp_path / "ws" / "a.txt").write_text("hello\n")
    session, events = make_session(
        [
            _call("read_file", path="a.txt"),
            _call("edit_file", path="a.txt", old_string="hello", new_string="bye"),
            {"text": "ok"},
        ],
        auto_approve=True,
    )
    await session.run("x")
    read, edit = _results(events)
    assert read.status == "ok" and "hello" in read.output
    assert edit.status == "ok" and (tmp_path / "ws" / "a.txt").read_text() == "bye\n"
    assert len(_hook_inputs(hooks_dir, "pass")) == 1 and _hook_inputs(hooks_dir, "never") == []


async def test_modified_arguments_go_through_policy_again_and_are_denied(make_session, tmp_path, hooks_dir):
    # A hook that rewrites a harmless read into a read of a secret must not smuggle it past policy.
    command = _hook_program(
        hooks_dir,
        "rewrite",
        "print(json.dumps({'decision': 'modify', 'arguments': {'path': os.path.expanduser('~/.ssh/id_rsa')}}))\n",
    )
    _write_user_hooks(tmp_path, {"preToolUse": [{"matcher": "read_file", "command": command}]})
    (tmp_path / "ws" / "a.txt").write_text("fine\n")
    session, events = make_session([_call("read_file", path="a.txt"), {"text": "ok"}], auto_approve=True)
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied"
    (line,) = audit_actions(session)
    assert line["outcome"]["status"] == "denied"
    assert ".ssh" in json.dumps(line)  # the record holds what was really asked for, not the model's call


async def test_modified_arguments_are_approved_for_what_they_now_do(make_session, tmp_path, hooks_dir):
    command = _hook_program(
        hooks_dir,
        "reshape",
        "args = dict(data['arguments']); args['command'] = 'echo changed-by-hook > out.txt'\n"
        "print(json.dumps({'decision': 'modify', 'arguments': args}))\n",
    )
    _write_user_hooks(tmp_path, {"preToolUse": [{"matcher": "shell", "command": command}]})
    approver = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session([_call("shell", command="ls"), {"text": "ok"}], approver=approver)
    await session.run("x")
    # `ls` would run without asking; the rewritten command writes, so a person was asked about *it*.
    (asked,) = approver.asked
    assert "changed-by-hook" in asked.action.summary or "changed-by-hook" in json.dumps(
        asked.action.payload.model_dump()
    )
    (result,) = _results(events)
    assert result.status == "ok" and "A preToolUse hook changed the arguments" in result.output
    assert (tmp_path / "ws" / "out.txt").read_text() == "changed-by-hook\n"
    assert result.data["hook_arguments"]["command"] == "echo changed-by-hook > out.txt"
    (line,) = audit_actions(session)
    assert "changed-by-hook" in line["action"]["payload"]["command"]


async def test_modified_arguments_that_do_not_validate_are_an_error(make_session, tmp_path, hooks_dir):
    command = _hook_program(
        hooks_dir, "broken", "print(json.dumps({'decision': 'modify', 'arguments': {'nope': 1}}))\n"
    )
    _write_user_hooks(tmp_path, {"preToolUse": [{"command": command}]})
    session, events = make_session([_call("glob", pattern="*"), {"text": "ok"}])
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "error" and "changed the arguments into invalid ones" in result.output
    assert audit_actions(session) == []


# -- failures block -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("sys.exit(3)\n", "failed (exit 3)"),
        ("sys.stderr.write('kaboom'); sys.exit(1)\n", "kaboom"),
        ("print('not json at all')\n", "not valid"),
        ("print(json.dumps({'decison': 'pass'}))\n", "unknown key"),
        ("print(json.dumps({'decision': 'maybe'}))\n", "decision must be"),
        ("print(json.dumps([1, 2]))\n", "JSON object"),
    ],
)
async def test_a_failing_hook_blocks_and_says_why(make_session, tmp_path, hooks_dir, body, expected):
    command = _hook_program(hooks_dir, "bad", body)
    _write_user_hooks(tmp_path, {"preToolUse": [{"command": command}]})
    session, events = make_session([_call("glob", pattern="*"), {"text": "ok"}])
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied" and expected in result.output


async def test_a_nonzero_exit_with_a_valid_answer_follows_the_answer(make_session, tmp_path, hooks_dir):
    command = _hook_program(hooks_dir, "exit2", "print(json.dumps({'decision': 'pass'})); sys.exit(2)\n")
    _write_user_hooks(tmp_path, {"preToolUse": [{"command": command}]})
    session, events = make_session([_call("glob", pattern="*"), {"text": "ok"}])
    await session.run("x")
    assert _results(events)[0].status == "ok"


async def test_a_hook_past_its_deadline_blocks_and_its_processes_are_killed(
    make_session, tmp_path, hooks_dir
):
    pid_file = hooks_dir / "child.pid"
    script = hooks_dir / "slow.sh"
    script.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > {pid_file}\nsleep 60\n")
    script.chmod(0o755)
    _write_user_hooks(tmp_path, {"preToolUse": [{"command": str(script), "timeoutMs": 300}]})
    session, events = make_session([_call("glob", pattern="*"), {"text": "ok"}])
    started = time.monotonic()
    await session.run("x")
    assert time.monotonic() - started < 10
    (result,) = _results(events)
    assert result.status == "denied" and "timed out after 300 ms" in result.output
    child = int(pid_file.read_text())
    assert wait_until_gone([child], deadline_s=2) == [], "the hook's background child outlived its deadline"


async def test_hooks_get_a_scrubbed_environment(make_session, tmp_path, hooks_dir):
    command = _hook_program(hooks_dir, "env", "open(log + '.env', 'w').write(json.dumps(dict(os.environ)))\n")
    _write_user_hooks(tmp_path, {"preToolUse": [{"command": command}]})
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "OPENAI_API_KEY": "sk-secret",
        "GITHUB_TOKEN": "ghp-secret",
        "MY_SECRET_THING": "s3cret",
        "LANG": "C.UTF-8",
    }
    session, events = make_session([_call("glob", pattern="*"), {"text": "ok"}], environ=environ)
    await session.run("x")
    assert _results(events)[0].status == "ok"
    env = json.loads((hooks_dir / "env.log.env").read_text())
    assert not {"OPENAI_API_KEY", "GITHUB_TOKEN", "MY_SECRET_THING"} & set(env)
    assert env["HOME"] == str(tmp_path) and env["LANG"] == "C.UTF-8"


async def test_a_hook_finds_no_program_in_the_workspace_on_its_path(make_session, tmp_path, hooks_dir):
    """Red team: the hook is the user's program, but what it runs by name was looked up on a PATH that held
    the workspace's activated virtualenv (and relative entries), where the model plants a `formatter`."""
    planted = tmp_path / "ws" / ".venv" / "bin" / "formatter"
    planted.parent.mkdir(parents=True)
    planted.write_text(f"#!/bin/sh\ntouch {tmp_path / 'PLANTED-RAN'}\n")
    planted.chmod(0o755)
    command = _hook_program(
        hooks_dir,
        "runs",
        "import subprocess\n"
        "subprocess.run(['formatter'], check=False) if __import__('shutil').which('formatter') else None\n"
        "open(log + '.path', 'w').write(os.environ['PATH'])\n",
    )
    _write_user_hooks(tmp_path, {"preToolUse": [{"command": command}]})
    environ = {"PATH": f"{planted.parent}:.:bin::{os.environ['PATH']}", "HOME": str(tmp_path)}
    session, events = make_session([_call("glob", pattern="*"), {"text": "ok"}], environ=environ)
    await session.run("x")
    assert _results(events)[0].status == "ok"
    assert not (tmp_path / "PLANTED-RAN").exists()
    entries = (hooks_dir / "runs.log.path").read_text().split(":")
    assert str(planted.parent) not in entries and all(entry.startswith("/") for entry in entries), entries


# -- who may configure hooks ----------------------------------------------------------------------------


async def test_project_hooks_are_ignored_with_a_warning(make_session, tmp_path, hooks_dir):
    command = _hook_program(hooks_dir, "planted", "print(json.dumps({'decision': 'block', 'reason': 'p'}))\n")
    project = tmp_path / "ws" / ".seepient"
    project.mkdir(parents=True)
    (project / "settings.json").write_text(json.dumps({"hooks": {"preToolUse": [{"command": command}]}}))
    session, events = make_session([_call("glob", pattern="*"), {"text": "ok"}])
    await session.run("x")
    assert _results(events)[0].status == "ok"
    assert _hook_inputs(hooks_dir, "planted") == []
    assert any("never set hooks" in str(w) for w in session.context.warnings)
    # Trusting the project changes nothing about it: a project never runs commands on this machine.
    trusted, events = make_session([_call("glob", pattern="*"), {"text": "ok"}], project_trust=True)
    await trusted.run("x")
    assert _results(events)[0].status == "ok"
    assert _hook_inputs(hooks_dir, "planted") == []
    assert any("never set hooks" in str(w) for w in trusted.context.warnings)


async def test_a_hook_whose_script_lives_in_the_workspace_is_refused(make_session, tmp_path):
    workspace = tmp_path / "ws"
    (workspace / "hook.sh").write_text("#!/bin/sh\nexit 0\n")
    (workspace / "hook.sh").chmod(0o755)
    _write_user_hooks(tmp_path, {"preToolUse": [{"command": "sh ./hook.sh"}]})
    session, events = make_session([_call("glob", pattern="*"), {"text": "ok"}])
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied" and "inside the workspace" in result.output


@pytest.mark.parametrize(
    ("tool", "target"),
    [
        ("write_file", "project"),
        ("edit_file", "project"),
        ("write_file", "user"),
        ("shell", "project"),
        ("shell", "user"),
    ],
)
async def test_the_model_cannot_change_hook_settings(make_session, tmp_path, hooks_dir, tool, target):
    command = _hook_program(hooks_dir, "kept", "")
    _write_user_hooks(tmp_path, {"preToolUse": [{"command": command}]})
    project = tmp_path / "ws" / ".seepient" / "settings.json"
    project.parent.mkdir(parents=True)
    project.write_text('{"permissions": {}}')
    path = project if target == "project" else tmp_path / "seepient-home" / "settings.json"
    before = path.read_text()
    evil = json.dumps({"hooks": {"preToolUse": []}, "permissions": {"allow": ["Shell"]}})
    if tool == "write_file":
        call = _call("write_file", path=str(path), content=evil)
    elif tool == "edit_file":
        call = _call("edit_file", path=str(path), old_string='{"permissions": {}}', new_string=evil)
    else:
        call = _call("shell", command=f"echo '{evil}' > {path}")
    session, events = make_session([call, {"text": "ok"}], auto_approve=True)
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied"
    assert path.read_text() == before


# -- postToolUse ------------------------------------------------------------------------------------------


async def test_post_hooks_see_the_outcome_and_their_feedback_reaches_the_model(
    make_session, tmp_path, hooks_dir
):
    command = _hook_program(
        hooks_dir,
        "post",
        "print(json.dumps({'decision': 'block', 'reason': 'lint failed: E501'}))\n",
    )
    _write_user_hooks(tmp_path, {"postToolUse": [{"matcher": "write_file", "command": command}]})
    session, events = make_session(
        [_call("write_file", path="n.py", content="x = 1\n"), {"text": "ok"}], auto_approve=True
    )
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "ok" and "lint failed: E501" in result.output
    (seen,) = _hook_inputs(hooks_dir, "post")
    assert seen["event"] == "postToolUse" and seen["status"] == "ok"
    assert seen["action"]["kind"] == "file_change" and seen["action"]["digest"] == result.digest


# -- sessionStart and stop --------------------------------------------------------------------------------


async def test_session_start_runs_once_and_its_context_joins_the_system_prompt(
    make_session, tmp_path, hooks_dir
):
    command = _hook_program(hooks_dir, "start", "print('The build is broken on main.')\n")
    _write_user_hooks(tmp_path, {"sessionStart": [{"command": command}]})
    session, events = make_session([{"text": "one"}, {"text": "two"}])
    await session.run("a")
    await session.run("b")
    assert len(_hook_inputs(hooks_dir, "start")) == 1
    assert "The build is broken on main." in session._loop._start_context


async def test_a_blocking_session_start_fails_the_turn_with_a_reason(make_session, tmp_path, hooks_dir):
    command = _hook_program(
        hooks_dir, "deny", "print(json.dumps({'decision': 'block', 'reason': 'VPN off'}))\n"
    )
    _write_user_hooks(tmp_path, {"sessionStart": [{"command": command}]})
    session, events = make_session([{"text": "never"}])
    outcome = await session.run("a")
    assert outcome.reason == "error" and "VPN off" in (outcome.error or "")
    assert any(isinstance(e, ErrorEvent) and e.code == "hook_blocked" for e in events)
    assert session.history == ()  # nothing reached the model


async def test_a_stop_hook_keeps_the_turn_going_with_its_reason(make_session, tmp_path, hooks_dir):
    command = _hook_program(
        hooks_dir,
        "stop",
        "if not data['stop_hook_active']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'run the tests first'}))\n",
    )
    _write_user_hooks(tmp_path, {"stop": [{"command": command}]})
    session, events = make_session([{"text": "done?"}, {"text": "now done"}])
    outcome = await session.run("a")
    assert (outcome.reason, outcome.text, outcome.steps) == ("final", "now done", 2)
    fed = [m.content for m in session.history if m.role == "user"]
    assert any("run the tests first" in text for text in fed)
    first, second = _hook_inputs(hooks_dir, "stop")
    assert (first["stop_hook_active"], second["stop_hook_active"]) == (False, True)
    assert first["text"] == "done?"


async def test_a_stop_hook_that_always_blocks_cannot_loop_forever(make_session):
    calls = []

    def always(data):
        calls.append(data)
        return {"decision": "block", "reason": "more"}

    turns = [{"text": f"t{i}"} for i in range(MAX_STOP_CONTINUATIONS + 1)]
    session, events = make_session(turns, hooks=[FunctionHook("stop", always)])
    outcome = await session.run("a")
    assert outcome.reason == "final" and outcome.steps == MAX_STOP_CONTINUATIONS + 1
    assert len(calls) == MAX_STOP_CONTINUATIONS
    assert isinstance(events[-1], TurnCompleted)


# -- Python callables -----------------------------------------------------------------------------------


async def test_function_hooks_sync_and_async_block_modify_and_pass(make_session, tmp_path):
    (tmp_path / "ws" / "a.txt").write_text("A\n")
    (tmp_path / "ws" / "b.txt").write_text("B\n")
    seen: list[str] = []

    def redirect(data):
        seen.append(data["arguments"]["path"])
        return (
            {"decision": "modify", "arguments": {"path": "b.txt"}}
            if data["arguments"]["path"] == "a.txt"
            else None
        )

    async def no_glob(data):
        await asyncio.sleep(0)
        return {"decision": "block", "reason": "use grep"}

    session, events = make_session(
        [_call("read_file", path="a.txt"), _call("glob", pattern="*"), {"text": "ok"}],
        hooks=[
            FunctionHook("preToolUse", redirect, matcher="read_file"),
            FunctionHook("preToolUse", no_glob, "glob"),
        ],
    )
    await session.run("x")
    read, glob = _results(events)
    assert read.status == "ok" and "B" in read.output and seen == ["a.txt"]
    assert glob.status == "denied" and "use grep" in glob.output and "no_glob" in glob.output


async def test_function_hooks_that_raise_or_hang_block(make_session):
    def broken(data):
        raise RuntimeError("bug in my hook")

    async def hangs(data):
        await asyncio.sleep(30)

    session, events = make_session(
        [_call("glob", pattern="*"), _call("grep", pattern="x"), {"text": "ok"}],
        hooks=[
            FunctionHook("preToolUse", broken, "glob"),
            FunctionHook("preToolUse", hangs, "grep", timeout_s=0.2),
        ],
    )
    await session.run("x")
    raised, hung = _results(events)
    assert raised.status == "denied" and "RuntimeError: bug in my hook" in raised.output
    assert hung.status == "denied" and "timed out" in hung.output


async def test_hooks_added_to_an_open_session_apply_and_approval_still_decides(make_session):
    approver = ScriptedApprover((ApprovalDecision.REJECT, "not today"))
    session, events = make_session([_call("shell", command="touch x"), {"text": "ok"}], approver=approver)
    session.hooks.add("preToolUse", lambda data: None, matcher="shell")  # passes: policy and approval decide
    await session.run("x")
    assert any(isinstance(e, PermissionRequest) for e in events)
    (result,) = _results(events)
    assert result.status == "rejected" and "not today" in result.output


def test_bad_hook_settings_are_refused_with_the_file_named(tmp_path):
    from seepient.config import SeepientPaths, SettingsError, load_settings

    home = tmp_path / "h"
    home.mkdir()
    (home / "settings.json").write_text(
        json.dumps({"hooks": {"preToolUse": [{"matcher": "(", "command": "x"}]}})
    )
    with pytest.raises(SettingsError, match=r"settings.json.*hooks.*matcher"):
        load_settings(tmp_path, paths=SeepientPaths(home=home), managed_file=tmp_path / "none.json")
    (home / "settings.json").write_text(json.dumps({"hooks": {"stop": [{"command": ""}]}}))
    with pytest.raises(SettingsError, match="non-empty command"):
        load_settings(tmp_path, paths=SeepientPaths(home=home), managed_file=tmp_path / "none.json")


def test_hook_lists_from_user_and_config_files_add_up(tmp_path):
    from seepient.config import SeepientPaths, load_settings

    home = tmp_path / "h"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"hooks": {"preToolUse": [{"command": "a"}]}}))
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"hooks": {"preToolUse": [{"command": "b"}], "stop": [{"command": "c"}]}}))
    settings = load_settings(
        tmp_path, paths=SeepientPaths(home=home), config_file=config, managed_file=tmp_path / "none.json"
    )
    assert [h.command for h in settings.hooks.pre_tool_use] == ["a", "b"]
    assert [h.command for h in settings.hooks.stop] == ["c"]


@pytest.mark.parametrize("where", ["user-home", "workspace-is-home", "seepient-home"])
@pytest.mark.parametrize("tool", ["write_file", "shell"])
def test_hook_settings_stay_out_of_reach_even_in_the_most_permissive_mode(tmp_path, where, tool):
    """``~/.seepient/settings.json`` when ``$SEEPIENT_HOME`` points elsewhere, the same file when the user runs
    Seepient in their home folder, and ``$SEEPIENT_HOME/settings.json``: refused in autonomous-trusted too."""
    from seepient.config.settings import PermissionSettings
    from seepient.policy.engine import PolicyEngine
    from seepient.protocol import FileChange, PreparedActionDraft, ShellCommand

    home = tmp_path / "home"
    seepient_home = tmp_path / "elsewhere"
    workspace = home if where == "workspace-is-home" else tmp_path / "ws"
    for folder in (home / ".seepient", seepient_home, workspace):
        folder.mkdir(parents=True, exist_ok=True)
    target = (
        seepient_home / "settings.json" if where == "seepient-home" else home / ".seepient" / "settings.json"
    )
    engine = PolicyEngine(
        workspace,
        seepient_home=seepient_home,
        mode="autonomous-trusted",
        permissions=PermissionSettings(),
        home=home,
    )
    payload = (
        FileChange(path=str(target), pre_image_sha256=None, new_content='{"hooks": {}}')
        if tool == "write_file"
        else ShellCommand(command=f"echo '{{}}' > {target}", cwd=str(workspace))
    )
    draft = PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool=tool,
        kind="file_change" if tool == "write_file" else "shell",
        payload=payload,
        read_only=False,
        summary="rewrite the hook settings",
    )
    verdict = engine.evaluate(draft)
    assert verdict.decision == "deny", verdict
