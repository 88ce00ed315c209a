"""The write-ahead audit under SIGKILL: the real ``seepient run --model replay:… -y`` is killed at 100+ seeded
moments spread over a ``write_file``, a multi-file ``apply_patch``, a shell command that writes and a
background process. After every kill: each file that differs from the original is named by an intent
record, ``verify`` passes and lists the intents left without an outcome; after the next start: the patch
landed whole or not at all, no temp file of the killed commit is left, and every interrupted action is
closed as interrupted, once.

Moments drawn from a timeline can all miss an action of a few milliseconds when the machine is busy (a
loaded CI host once put none of 26 inside the ``write_file``), so a few moments per kind are anchored
instead: the kill comes a fraction of the action's measured length after its intent record appears in the
log, which lands inside the action however the run's start drifts.

Each moment starts one process. To keep a hundred of them near a minute, the runs are forked from a
``seepient`` that has already imported itself (``cli_zygote.py``: the same entry point as the console
script, minus a second of imports); a few moments also run through the console script itself, and the
next start and ``audit verify`` are checked through the real CLI for a sample.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from seepient.audit import verify_log
from seepient.config import SeepientPaths
from seepient.runtime import Session, SessionOptions
from tests.conftest import BIN, REPO

MOMENTS_PER_KIND = 26
ANCHORED_PER_KIND = 6
ANCHORED_KINDS = ("write_file", "apply_patch", "shell")
CONSOLE_SCRIPT_MOMENTS = 4
CONSOLE_SCRIPT_IMPORT_S = 1.0
SEED = 20261201
KINDS = ("write_file", "apply_patch", "shell", "background")


def _lines(tag: str, count: int) -> str:
    return "".join(f"{tag} line {i} {'x' * 60}\n" for i in range(count))


ORIGINAL = {
    "pb.txt": _lines("pb", 800),
    "pc.txt": _lines("pc", 800),
    "pd.txt": "doomed\n",
    "keep.txt": "untouched\n",
}
PATCH = (
    "*** Begin Patch\n*** Add File: pa.txt\n"
    + "".join(f"+{line}\n" for line in _lines("pa", 800).splitlines())
    + f"*** Update File: pb.txt\n@@\n-pb line 0 {'x' * 60}\n+PB LINE 0\n"
    + f"*** Update File: pc.txt\n@@\n-pc line 1 {'x' * 60}\n+PC LINE 1\n"
    + "*** Delete File: pd.txt\n*** End Patch\n"
)
SCRIPT = [
    {
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "big.txt", "content": _lines("big", 1500)}}
        ]
    },
    {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]},
    {
        "tool_calls": [
            {
                "name": "shell",
                "arguments": {
                    "command": "echo a > sh_a.txt; sleep 0.03; echo b > sh_b.txt; sleep 0.03; cp big.txt sh_copy.txt"
                },
            }
        ]
    },
    {
        "tool_calls": [
            {
                "name": "shell",
                "arguments": {
                    "command": "for i in 1 2 3 4 5 6 7 8 9 10; do echo $i >> bg_out.txt; sleep 0.03; done",
                    "run_in_background": True,
                },
            }
        ]
    },
    {"tool_calls": [{"name": "shell", "arguments": {"command": "sleep 0.35"}}]},
    {"text": "done"},
]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Zygote:
    """The pre-imported ``seepient`` that forks each run (see ``cli_zygote.py``)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.cli_zygote"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def spawn(self, argv: list[str], cwd: Path, env: dict[str, str], out: Path) -> tuple[int, float]:
        answer = self._ask(
            {
                "argv": argv,
                "cwd": str(cwd),
                "env": env,
                "stdout": str(out) + ".out",
                "stderr": str(out) + ".err",
            }
        )
        return answer["pid"], answer["t"]

    def wait(self, pid: int) -> int:
        return self._ask({"wait": pid})["status"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


@dataclass
class World:
    root: Path
    workspace: Path
    home: Path
    env: dict[str, str]
    script: Path

    @classmethod
    def make(cls, base: Path, name: str) -> World:
        root = base / name
        workspace, home = root / "ws", root / "seepient-home"
        workspace.mkdir(parents=True)
        for path, text in ORIGINAL.items():
            (workspace / path).write_text(text)
        script = root / "script.json"
        script.write_text(json.dumps(SCRIPT))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root),
            "SEEPIENT_HOME": str(home),
            "LANG": "C.UTF-8",
        }
        return cls(root, workspace, home, env, script)

    @property
    def argv(self) -> list[str]:
        # --ephemeral: a new database's migration runs beside the turn when the session is stored and moves
        # every action by up to a tenth of a second from run to run, so the moments drawn from the timeline
        # would miss the short ones. What is under test here is the audit log, not the session store.
        return [
            "run", "go", "--model", f"replay:{self.script}", "-y", "--ephemeral", "--workspace", str(self.workspace)
        ]  # fmt: skip

    @property
    def log(self) -> Path:
        return self.home / "audit.log"

    @property
    def public_key(self) -> Path:
        return self.home / "keys" / "audit-signing.pub"

    def records(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        # A record cut off by the kill is not a record: only whole lines count, and a cut-off line the next
        # start ended with a newline stays torn bytes (sealed by the torn_tail record after it).
        records, torn = [], 0
        for line in self.log.read_bytes().split(b"\n")[:-1]:
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                torn += 1
        assert torn == 0 or any(r["type"] == "torn_tail" for r in records), "torn bytes with no seal"
        return records

    def changed_files(self) -> set[str]:
        """Every file that differs from the original (created, changed or removed), temp files aside."""
        now = {
            str(path.relative_to(self.workspace)): _sha(path.read_bytes())
            for path in self.workspace.rglob("*")
            if path.is_file() and not path.is_symlink() and not path.name.startswith(".seepient-commit-")
        }
        before = {path: _sha(text.encode()) for path, text in ORIGINAL.items()}
        return {path for path in now.keys() | before.keys() if now.get(path) != before.get(path)}

    def leftovers(self) -> list[str]:
        return sorted(str(p.relative_to(self.workspace)) for p in self.workspace.rglob(".seepient-commit-*"))


def _kind(intent: dict[str, Any]) -> str:
    action = intent["action"]
    if action["tool"] == "shell":
        if action["payload"].get("background"):
            return "background"
        # The last command only waits while the background process writes: its moments are the background's.
        return "shell" if "sh_a.txt" in action["payload"]["command"] else "wait"
    return action["tool"]


def _named(path: str, intents: list[dict[str, Any]]) -> bool:
    for intent in intents:
        if any(image["path"] == path for image in intent.get("files", ())):
            return True
        payload = intent["action"]["payload"]
        if payload.get("type") == "shell" and path in payload["command"]:
            return True
    return False


def _timestamp(record: dict[str, Any]) -> float:
    return datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")).timestamp()


def _timeline(zygote: Zygote, base: Path) -> tuple[dict[str, tuple[float, float]], dict[str, float]]:
    """Each kind of action's window after the fork, from a full run's intent and outcome timestamps (the
    earliest start and latest end over two runs, so a moment drawn from it lands inside the action), and
    each kind's shortest length from intent to outcome."""
    windows: dict[str, tuple[float, float]] = {}
    lengths: dict[str, float] = {}
    for attempt in range(2):
        world = World.make(base, f"timeline{attempt}")
        pid, forked = zygote.spawn(world.argv, world.workspace, world.env, world.root / "run")
        assert zygote.wait(pid) == 0, (world.root / "run.err").read_text()
        records = world.records()
        outcomes = {r["action_id"]: _timestamp(r) for r in records if r["type"] == "outcome"}
        kinds = {}
        for intent in (r for r in records if r["type"] == "intent"):
            kinds[_kind(intent)] = (_timestamp(intent) - forked, outcomes[intent["action"]["id"]] - forked)
        # The background process writes for a while after its start was recorded; the last shell waits it out.
        kinds["background"] = (kinds["background"][0], _end_of_run(records, forked))
        assert set(KINDS) <= set(kinds), kinds
        for kind in KINDS:
            start, end = kinds[kind]
            old = windows.get(kind, (start, end))
            windows[kind] = (min(old[0], start), max(old[1], end))
            lengths[kind] = min(lengths.get(kind, end - start), end - start)
    return windows, lengths


def _end_of_run(records: list[dict[str, Any]], forked: float) -> float:
    return max(_timestamp(r) for r in records) - forked


def _kill_at(pid: int, forked: float, delay: float) -> None:
    pause = forked + delay - time.time()
    if pause > 0:
        time.sleep(pause)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _ended(pid: int) -> bool:
    # The zygote reaps its children only when asked, so an ended run lingers as a zombie until then.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] in {"Z", "X"}


def _kill_after_intent(pid: int, world: World, kind: str, delay: float, timeout: float = 60.0) -> None:
    """Kill ``delay`` seconds after the log holds the intent of an action of ``kind``."""
    deadline = time.time() + timeout
    offset, partial = 0, b""
    while time.time() < deadline and not _ended(pid):
        try:
            with world.log.open("rb") as log:
                log.seek(offset)
                chunk = log.read()
        except FileNotFoundError:
            chunk = b""
        offset += len(chunk)
        *lines, partial = (partial + chunk).split(b"\n")
        for line in lines:
            record = json.loads(line) if line.strip() else {}
            if record.get("type") == "intent" and _kind(record) == kind:
                time.sleep(delay)
                os.kill(pid, signal.SIGKILL)
                return
        time.sleep(0.0002)
    _kill_at(pid, time.time(), 0.0)


def _reap_group(pid: int) -> None:
    # Whatever the run started in its process group (the sandbox dies with its parent; this makes sure).
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _next_start(world: World) -> None:
    script = world.root / "next.json"
    script.write_text(json.dumps([{"text": "hello"}]))
    options = SessionOptions(
        workspace=world.workspace, model=f"replay:{script}", paths=SeepientPaths(home=world.home)
    )

    async def open_and_close() -> None:
        session = Session.open(options)
        await session.aclose()

    asyncio.run(open_and_close())


@dataclass
class Moment:
    kind: str
    delay: float
    console_script: bool = False
    # The delay counts from the kind's intent record instead of from the fork.
    anchored: bool = False


def _check_after_kill(world: World, label: str) -> list[dict[str, Any]]:
    records = world.records()
    intents = [r for r in records if r["type"] == "intent"]
    closed = {r["action_id"] for r in records if r["type"] == "outcome"}
    for path in world.changed_files():
        assert _named(path, intents), f"{label}: {path} changed with no intent naming it"
    report = verify_log(world.log, public_key=world.public_key if world.public_key.exists() else None)
    open_ids = {i["action"]["id"] for i in intents} - closed
    if report.ok:
        assert {a.action_id for a in report.interrupted if a.state == "open"} == open_ids, label
    else:
        # Killed in the middle of writing a record: only that cut-off line fails, until the next start seals it.
        assert "incomplete line" in (report.problem or ""), f"{label}: {report.problem}"
    return [i for i in intents if i["action"]["id"] in open_ids]


def _check_after_next_start(world: World, interrupted: list[dict[str, Any]], label: str) -> None:
    assert world.leftovers() == [], f"{label}: the killed commit's files are still there"
    report = verify_log(world.log, public_key=world.public_key if world.public_key.exists() else None)
    assert report.ok, f"{label}: {report.problem}"
    if world.public_key.exists() and report.head_seq:
        assert report.signature == "valid", label
    closed = {a.action_id: a for a in report.interrupted if a.state == "closed"}
    assert set(closed) == {i["action"]["id"] for i in interrupted}, label
    for intent in interrupted:
        states = {f.state for f in closed[intent["action"]["id"]].files}
        # All or nothing: a patch's files all hold their new content, or all their old one.
        assert len(states) <= 1 and states <= {"new", "old"}, (
            f"{label}: {intent['action']['tool']} left {states}"
        )
    for path in world.changed_files():
        assert _named(path, [r for r in world.records() if r["type"] == "intent"]), f"{label}: {path}"


@pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap and /proc are Linux's")
def test_a_session_killed_at_any_moment_leaves_every_effect_covered_by_an_intent(tmp_path: Path) -> None:
    zygote = Zygote()
    try:
        windows, lengths = _timeline(zygote, tmp_path)
        rng = random.Random(SEED)
        moments = [
            Moment(kind, rng.uniform(start - 0.01, end + 0.01))
            for kind, (start, end) in windows.items()
            for _ in range(MOMENTS_PER_KIND)
        ]
        for moment in rng.sample(moments, CONSOLE_SCRIPT_MOMENTS):
            moment.console_script = True
        # Within the first half of the action's shortest measured length, so its outcome has not come yet.
        moments += [
            Moment(kind, rng.uniform(0.0, lengths[kind] / 2), anchored=True)
            for kind in ANCHORED_KINDS
            for _ in range(ANCHORED_PER_KIND)
        ]
        rng.shuffle(moments)
        interrupted_kinds: Counter[str] = Counter()
        for number, moment in enumerate(moments):
            anchor = "after its intent" if moment.anchored else "after the fork"
            label = f"moment {number} ({moment.kind}, {moment.delay:.3f}s {anchor})"
            world = World.make(tmp_path, f"m{number}")
            if moment.console_script:
                # The console script itself; its own start costs the second of imports the zygote saves.
                started = time.time()
                process = subprocess.Popen(
                    [str(BIN / "seepient"), *world.argv],
                    cwd=world.workspace,
                    env=world.env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
                # Its imports take about a second before the timeline the moments were drawn from begins.
                _kill_at(process.pid, started + CONSOLE_SCRIPT_IMPORT_S, moment.delay)
                process.wait(timeout=60)
                _reap_group(process.pid)
            else:
                pid, forked = zygote.spawn(world.argv, world.workspace, world.env, world.root / "run")
                if moment.anchored:
                    _kill_after_intent(pid, world, moment.kind, moment.delay)
                else:
                    _kill_at(pid, forked, moment.delay)
                zygote.wait(pid)
                _reap_group(pid)
            interrupted = _check_after_kill(world, label)
            interrupted_kinds.update(_kind(intent) for intent in interrupted)
            if number % 25 == 0:
                # The next start and the verdict through the real command line, for a sample.
                script = world.root / "next.json"
                script.write_text(json.dumps([{"text": "hello"}]))
                env = world.env
                run = subprocess.run(
                    [
                        str(BIN / "seepient"),
                        "run",
                        "x",
                        "--model",
                        f"replay:{script}",
                        "--workspace",
                        str(world.workspace),
                    ],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                assert run.returncode == 0, run.stderr
                assert ("was interrupted" in run.stderr) == bool(interrupted), f"{label}: {run.stderr}"
                verdict = subprocess.run(
                    [str(BIN / "seepient"), "audit", "verify"],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                assert verdict.returncode == 0, verdict.stdout
                assert ("INTERRUPTED" in verdict.stdout) == bool(interrupted), verdict.stdout
            else:
                _next_start(world)
            _check_after_next_start(world, interrupted, label)
        # The moments landed inside the actions, not just before or after them.
        assert sum(interrupted_kinds.values()) >= 20, interrupted_kinds
        assert {"write_file", "apply_patch", "shell"} <= set(interrupted_kinds), interrupted_kinds
    finally:
        zygote.close()
