"""End to end: ``seepient run --image`` reaches the vision route with the image in the request, ``--plan``
plans with read-only tools and carries out only an approved plan, and ``seepient commit`` commits the
staged changes with the commit route's message through policy, the sandbox and the audit log."""

from __future__ import annotations

import base64
import json
import subprocess

from tests.e2e.conftest import json_events
from tests.e2e.test_cli_terminal import Terminal
from tests.support.sse_server import Reply, SSEReplayServer

_PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))


def _routes(world, server: SSEReplayServer) -> None:
    # Providers and their base URLs come from the user's settings: a project never chooses them.
    world.seepient_home.mkdir(exist_ok=True)
    settings = {
        "models": {
            "providers": {"local": {"type": "openai-chat", "baseUrl": server.base_url}},
            "routes": {
                "text.standard": {"model": "local:writer"},
                "vision.standard": {"model": "local:eyes"},
            },
            "retry": {"maxAttempts": 1},
        }
    }
    (world.seepient_home / "settings.json").write_text(json.dumps(settings))


def test_image_goes_to_the_vision_route(world, seepient):
    image = world.workspace / "shot.png"
    image.write_bytes(_PNG)
    with SSEReplayServer() as server:
        _routes(world, server)
        server.queue(Reply.synthesized("I see a PNG."))
        proc = seepient("run", "describe it", "--image", str(image))
        bodies = [r.json() for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert "I see a PNG." in proc.stdout
    assert [b["model"] for b in bodies] == ["eyes"]
    user = [m for m in bodies[0]["messages"] if m["role"] == "user"][-1]
    url = f"data:image/png;base64,{base64.b64encode(_PNG).decode()}"
    assert {"type": "image_url", "image_url": {"url": url}} in user["content"]


def test_a_file_that_is_not_an_image_is_refused_before_any_request(world, seepient):
    fake = world.workspace / "notes.png"
    fake.write_text("just text\n")
    with SSEReplayServer() as server:
        _routes(world, server)
        proc = seepient("run", "describe it", "--image", str(fake))
        missing = seepient("run", "describe it", "--image", str(world.workspace / "nope.png"))
        asked = len(server.requests)
    assert proc.returncode == 2 and "not a PNG, JPEG, GIF or WebP" in proc.stderr
    assert missing.returncode == 2 and "cannot read it" in missing.stderr
    assert asked == 0


def _plan_script(world):
    return world.script(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
            {"text": "Plan: change x to 2 in a.py."},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.py", "content": "x = 2\n"}}]},
            {"text": "Done."},
        ]
    )


def test_headless_plan_without_yes_prints_the_plan_and_changes_nothing(world, seepient):
    (world.workspace / "a.py").write_text("x = 1\n")
    proc = seepient("run", "make x two", "--plan", "--model", f"replay:{_plan_script(world)}")
    assert proc.returncode == 0, proc.stderr
    assert "Plan: change x to 2 in a.py." in proc.stdout
    assert "Done." not in proc.stdout
    assert "-y" in proc.stderr
    assert (world.workspace / "a.py").read_text() == "x = 1\n"
    assert [r["action"]["tool"] for r in world.audit_records()] == ["read_file"]


def test_plan_approved_with_yes_continues_with_writes(world, seepient):
    (world.workspace / "a.py").write_text("x = 1\n")
    proc = seepient("run", "make x two", "--plan", "-y", "--json", "--model", f"replay:{_plan_script(world)}")
    assert proc.returncode == 0, proc.stderr
    assert (world.workspace / "a.py").read_text() == "x = 2\n"
    events = json_events(proc.stdout)
    completed = [e["text"] for e in events if e["type"] == "turn_completed"]
    assert completed == ["Plan: change x to 2 in a.py.", "Done."]
    records = world.audit_records()
    assert [(r["action"]["tool"], r["outcome"]["status"]) for r in records] == [
        ("read_file", "ok"),
        ("write_file", "ok"),
    ]


def _git(world, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=world.workspace, env=world.env, capture_output=True, text=True, check=True
    ).stdout


def _staged_repo(world) -> None:
    _git(world, "init", "-q")
    _git(world, "config", "user.name", "Test Author")
    _git(world, "config", "user.email", "author@example.test")
    (world.workspace / "greet.py").write_text("def greet():\n    return 'hi'\n")
    _git(world, "add", "greet.py")


def test_commit_with_yes_commits_the_written_message_through_the_audit(world, seepient):
    _staged_repo(world)
    message = "Add greet()\n\nA first function that says hi; $HOME and `backticks` stay literal."
    script = world.script([{"text": message}])
    proc = seepient("commit", "-y", "--model", f"replay:{script}")
    assert proc.returncode == 0, proc.stderr
    assert message in proc.stdout
    assert _git(world, "log", "-1", "--format=%B").strip() == message
    assert _git(world, "diff", "--cached", "--name-only") == ""
    records = world.audit_records()
    assert len(records) == 1
    assert records[0]["outcome"]["status"] == "ok"
    assert "git commit -F -" in json.dumps(records[0]["action"])
    assert records[0]["approval"]["approved_by"] == "flag:-y"
    assert seepient("audit", "verify").returncode == 0


def test_headless_commit_without_yes_only_prints_the_message(world, seepient):
    _staged_repo(world)
    script = world.script([{"text": "Add greet()"}])
    proc = seepient("commit", "--model", f"replay:{script}")
    assert proc.returncode == 0, proc.stderr
    assert "Add greet()" in proc.stdout and "-y" in proc.stderr
    assert (
        subprocess.run(["git", "rev-parse", "HEAD"], cwd=world.workspace, capture_output=True).returncode != 0
    )
    assert world.audit_records() == []


def test_commit_with_nothing_staged_says_so(world, seepient):
    _git(world, "init", "-q")
    script = world.script([{"text": "unused"}])
    proc = seepient("commit", "-y", "--model", f"replay:{script}")
    assert proc.returncode == 2
    assert "nothing is staged" in proc.stderr


def test_plan_on_a_terminal_is_asked_about_and_a_no_changes_nothing(world):
    (world.workspace / "a.py").write_text("x = 1\n")
    args = ["run", "make x two", "--plan", "--json", "--model", f"replay:{_plan_script(world)}"]
    term = Terminal(args, world.env, world.workspace)
    term.expect("Carry out this plan?")
    term.send("n\n")
    code, out = term.finish()
    assert code == 0
    assert (world.workspace / "a.py").read_text() == "x = 1\n"
    assert [e["text"] for e in json_events(out) if e["type"] == "turn_completed"] == [
        "Plan: change x to 2 in a.py."
    ]


def test_plan_approved_on_a_terminal_continues_and_the_write_is_still_asked_about(world):
    (world.workspace / "a.py").write_text("x = 1\n")
    args = ["run", "make x two", "--plan", "--json", "--model", f"replay:{_plan_script(world)}"]
    term = Terminal(args, world.env, world.workspace)
    term.expect("Carry out this plan?")
    term.send("y\n")
    term.expect("Approve?")
    term.send("y\n")
    code, _ = term.finish()
    assert code == 0
    assert (world.workspace / "a.py").read_text() == "x = 2\n"


def test_commit_on_a_terminal_asks_before_the_audited_commit(world):
    _staged_repo(world)
    script = world.script([{"text": "Add greet()"}])
    term = Terminal(["commit", "--model", f"replay:{script}"], world.env, world.workspace)
    screen = term.expect("Approve?")
    assert "git commit -F -" in screen
    term.send("y\n")
    code, out = term.finish()
    assert code == 0, out
    assert "Add greet()" in out
    assert _git(world, "log", "-1", "--format=%B").strip() == "Add greet()"
    assert world.audit_records()[0]["approval"]["approved_by"] == "user"
