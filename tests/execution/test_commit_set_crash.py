"""What a commit set promises under SIGKILL, checked by killing real processes mid-commit: every file is whole
(its old or its new bytes, a deleted file present or gone), and after the next start's recovery
(``recover_commits``, given what the intent says) the set has landed whole or not at all, with nothing of
the killed process left in the folder."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import time
from pathlib import Path

from seepient.execution.commit import commit_change, expected_images
from seepient.execution.commit_journal import Expected, recover_commits
from seepient.execution.commit_set import commit_changes
from seepient.protocol import FileChange

KILLS = 30
CEILING_S = 20.0


def _content(tag: str) -> bytes:
    body = os.urandom(200_000).hex()
    return f"HEAD {tag}\n{body}\nTAIL {tag}\n".encode()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _running(pid: int) -> bool:
    done, _ = os.waitpid(pid, os.WNOHANG)
    return not done


def _staged(directory: Path) -> list[str]:
    return [name for name in os.listdir(directory) if name.startswith(".seepient-commit-")]


def _expected(workspace: Path, request: tuple[FileChange, ...]) -> dict[str, Expected]:
    return {
        image.path: Expected(image.pre_image_sha256, image.post_image_sha256, image.delete)
        for image in expected_images(workspace, request)
    }


def _set_state(workspace: Path, old: dict[str, bytes], new: dict[str, bytes | None]) -> str:
    """'old' or 'new' when every file of the set is in that state; 'mixed' otherwise."""
    states = set()
    for name in new:
        path = workspace / name
        now = path.read_bytes() if path.exists() else None
        if now == new[name]:
            states.add("new")
        elif now == old.get(name):
            states.add("old")
        else:
            raise AssertionError(f"{name} is torn: neither its old nor its new bytes")
    return states.pop() if len(states) == 1 else "mixed"


def _kill_a_set_mid_commit(
    workspace: Path, rng: random.Random, aim_at_renames: bool, die_after_steps: int | None = None
):
    old = {"a": _content("a-old"), "b": _content("b-old"), "gone": _content("gone")}
    new: dict[str, bytes | None] = {"a": _content("a-new"), "made": _content("made"), "gone": None}
    new["b"] = _content("b-new")
    for name, data in old.items():
        (workspace / name).write_bytes(data)
    request = tuple(
        FileChange.model_validate(change)
        for change in (
            {"path": "a", "pre_image_sha256": _sha(old["a"]), "new_content": new["a"].decode()},
            {"path": "made", "pre_image_sha256": None, "new_content": new["made"].decode()},
            {"path": "gone", "pre_image_sha256": _sha(old["gone"]), "delete": True},
            {"path": "b", "pre_image_sha256": _sha(old["b"]), "new_content": new["b"].decode()},
        )
    )
    expected = _expected(workspace, request)
    # A forked child starts in microseconds, where a new interpreter would spend its time importing.
    pid = os.fork()
    if pid == 0:
        try:
            if die_after_steps is not None:
                _die_after(die_after_steps)
            commit_changes(workspace, request)
        finally:
            os._exit(0)
    if die_after_steps is not None:
        os.waitpid(pid, 0)
        return pid, old, new, expected
    started = time.monotonic()
    original = (workspace / "a").stat().st_ino
    if aim_at_renames:
        # Kill as soon as the first file of the set has been replaced: the renames are under way.
        while _running(pid) and (workspace / "a").stat().st_ino == original:
            if time.monotonic() - started > CEILING_S:
                break
            time.sleep(0.0001)
    else:
        while _running(pid) and not _staged(workspace) and time.monotonic() - started < CEILING_S:
            time.sleep(0.0002)
        time.sleep(rng.uniform(0, 0.01))
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    return pid, old, new, expected


def test_a_killed_set_is_finished_or_undone_whole_at_the_next_start(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    before: set[str] = set()
    after: set[str] = set()
    for round_number in range(KILLS):
        workspace = tmp_path / f"ws{round_number}"
        workspace.mkdir()
        pid, old, new, expected = _kill_a_set_mid_commit(
            workspace, rng, aim_at_renames=bool(round_number % 2)
        )
        # Each single file is whole right after the kill, whatever happened to the set.
        before.add(_set_state(workspace, old, new))
        # A commit by another session into the folder does not sweep away what the journal needs.
        assert commit_change(workspace, FileChange(path="other", pre_image_sha256=None, new_content="x")).ok
        assert recover_commits(workspace, pid, expected) == []
        state = _set_state(workspace, old, new)
        assert state in ("old", "new"), f"round {round_number}: the set was left split"
        after.add(state)
        assert _staged(workspace) == [], f"round {round_number}: {_staged(workspace)}"
    # The kills landed before and after the renames often enough to mean something (between two renames
    # is a window of microseconds; the test above kills there deterministically).
    assert after == {"old", "new"}, (before, after)


def _die_after(steps: int) -> None:
    """In the forked child: SIGKILL this process right after its ``steps``-th rename or unlink of the set."""
    import seepient.execution.commit_set as commit_set

    real = commit_set._apply_step
    done = 0

    def apply_then_maybe_die(step):
        nonlocal done
        real(step)
        done += 1
        if done == steps:
            os.kill(os.getpid(), signal.SIGKILL)

    commit_set._apply_step = apply_then_maybe_die


def test_a_set_killed_between_any_two_renames_is_finished_at_the_next_start(tmp_path: Path) -> None:
    for steps in (1, 2, 3):
        workspace = tmp_path / f"ws{steps}"
        workspace.mkdir()
        pid, old, new, expected = _kill_a_set_mid_commit(
            workspace, random.Random(steps), aim_at_renames=False, die_after_steps=steps
        )
        assert _set_state(workspace, old, new) == "mixed"
        assert recover_commits(workspace, pid, expected) == []
        assert _set_state(workspace, old, new) == "new", f"killed after {steps} renames"
        assert _staged(workspace) == []


def test_a_set_whose_file_changed_after_the_crash_is_undone_not_finished(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    pid, old, new, expected = _kill_a_set_mid_commit(
        workspace, random.Random(7), aim_at_renames=False, die_after_steps=2
    )
    # Someone edits b (not yet renamed) before the next start: finishing the set would overwrite their work.
    (workspace / "b").write_bytes(b"edited by a person\n")
    problems = recover_commits(workspace, pid, expected)
    assert problems and "b" in problems[0]
    assert (workspace / "a").read_bytes() == old["a"] and not (workspace / "made").exists()
    assert (workspace / "gone").read_bytes() == old["gone"]
    assert (workspace / "b").read_bytes() == b"edited by a person\n"
    assert _staged(workspace) == []


def test_a_forged_journal_cannot_make_recovery_write_anything_the_intent_did_not_approve(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    config = workspace / ".git" / "config"
    config.write_text("[core]\n")
    (workspace / "a").write_text("old a\n")
    dead = _dead_pid()
    planted = workspace / f".seepient-commit-{dead}-{'1' * 16}.tmp"
    planted.write_text("[core]\n\tfsmonitor = touch /tmp/pwned\n")
    # The model's shell can write the workspace: a journal that would rename its file over .git/config.
    journal = workspace / f".seepient-commit-{dead}-{'2' * 16}.journal"
    journal.write_text(
        json.dumps(
            {
                "format": "seepient-commit-journal/1",
                "pid": dead,
                "steps": [
                    {"path": "a", "op": "replace", "temp": None, "backup": None},
                    {"path": ".git/config", "op": "replace", "temp": f"../{planted.name}", "backup": None},
                ],
            }
        )
    )
    approved = {"a": Expected(_sha(b"old a\n"), _sha(b"new a\n"))}
    recover_commits(workspace, dead, approved)
    assert config.read_text() == "[core]\n"
    assert (workspace / "a").read_text() == "old a\n"
    # Same journal with a name that stays in the folder: the step is not in the intent, so nothing moves.
    journal.write_text(
        json.dumps(
            {
                "format": "seepient-commit-journal/1",
                "pid": dead,
                "steps": [{"path": ".git/config", "op": "delete", "temp": None, "backup": None}],
            }
        )
    )
    recover_commits(workspace, dead, approved)
    assert config.read_text() == "[core]\n"


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid
