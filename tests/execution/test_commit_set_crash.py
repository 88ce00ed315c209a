"""What a commit set promises under SIGKILL, checked by killing real processes mid-commit: every file is whole
(its old or its new bytes, a deleted file present or gone), and the backups a killed set left behind are swept
by the next commit into that directory. (Across files a kill may split the set; the module says so.)"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import signal
import time
from pathlib import Path

from seepient.execution.commit import commit_change
from seepient.execution.commit_set import commit_changes
from seepient.protocol import FileChange

KILLS = 24
CEILING_S = 20.0


def _content(tag: str) -> bytes:
    body = os.urandom(200_000).hex()
    return f"HEAD {tag}\n{body}\nTAIL {tag}\n".encode()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _running(pid: int) -> bool:
    done, _ = os.waitpid(pid, os.WNOHANG)
    return not done


def _staged(directory: Path) -> bool:
    return any(name.startswith(".seepient-commit-") for name in os.listdir(directory))


def test_a_killed_set_leaves_every_file_whole_and_its_backups_are_swept(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    outcomes: dict[str, set[str]] = {"a": set(), "b": set(), "gone": set(), "made": set()}
    for round_number in range(KILLS):
        workspace = tmp_path / f"ws{round_number}"
        workspace.mkdir()
        old_a, old_b, old_gone = _content("a-old"), _content("b-old"), _content("gone")
        new_a, new_b, made = _content("a-new"), _content("b-new"), _content("made")
        for name, data in (("a", old_a), ("b", old_b), ("gone", old_gone)):
            (workspace / name).write_bytes(data)
        changes = [
            {"path": "a", "pre_image_sha256": _sha(old_a), "new_content": new_a.decode()},
            {"path": "made", "pre_image_sha256": None, "new_content": made.decode()},
            {"path": "gone", "pre_image_sha256": _sha(old_gone), "delete": True},
            {"path": "b", "pre_image_sha256": _sha(old_b), "new_content": new_b.decode()},
        ]
        request = tuple(FileChange.model_validate(change) for change in changes)
        # A forked child starts in microseconds, where a new interpreter would spend its time importing.
        pid = os.fork()
        if pid == 0:
            try:
                commit_changes(workspace, request)
            finally:
                os._exit(0)
        started = time.monotonic()
        original = (workspace / "a").stat().st_ino
        if round_number % 2:
            # Aim at the renames: kill as soon as the first file of the set has been replaced.
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
        a, b = (workspace / "a").read_bytes(), (workspace / "b").read_bytes()
        assert a in (old_a, new_a) and b in (old_b, new_b), f"round {round_number}: a torn file"
        outcomes["a"].add("new" if a == new_a else "old")
        outcomes["b"].add("new" if b == new_b else "old")
        if (workspace / "gone").exists():
            assert (workspace / "gone").read_bytes() == old_gone
            outcomes["gone"].add("present")
        else:
            outcomes["gone"].add("deleted")
        if (workspace / "made").exists():
            assert (workspace / "made").read_bytes() == made
            outcomes["made"].add("created")
        # The next commit into the directory sweeps what the killed process staged or kept as backups.
        swept = commit_change(workspace, FileChange(path="after", pre_image_sha256=None, new_content="x"))
        assert swept.ok
        assert not _staged(workspace), os.listdir(workspace)
    # The kills landed before, during and after the renames often enough to mean something.
    assert outcomes["a"] == {"old", "new"}, outcomes
