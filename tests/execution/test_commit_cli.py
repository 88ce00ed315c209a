"""The ``seepient-fs-commit`` console script: one JSON request on stdin, one CommitOutcome on stdout, and an
exit status of 0 (landed), 1 (refused) or 2 (malformed request)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from seepient.protocol import CommitOutcome


def commit_script() -> Path:
    script = Path(sys.executable).parent / "seepient-fs-commit"
    if script.is_file():
        return script
    found = shutil.which("seepient-fs-commit")
    if found is None:
        raise RuntimeError("seepient-fs-commit is not installed: run `pip install -e .` in the virtualenv")
    return Path(found)


def run_script(stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(commit_script())], input=stdin, capture_output=True, timeout=60)


def request(workspace: Path, change: dict[str, object]) -> bytes:
    return json.dumps({"workspace": str(workspace), "change": change}).encode()


def test_a_change_that_lands_exits_0_with_the_outcome(workspace: Path) -> None:
    (workspace / "a.txt").write_text("hello world\n")
    pre = hashlib.sha256(b"hello world\n").hexdigest()
    change = {"path": "a.txt", "pre_image_sha256": pre, "edits": [{"search": "world", "replace": "there"}]}
    done = run_script(request(workspace, change))
    assert done.returncode == 0, done.stderr
    outcome = CommitOutcome.model_validate_json(done.stdout)
    assert outcome.code == "OK"
    assert outcome.post_image_sha256 == hashlib.sha256(b"hello there\n").hexdigest()
    assert (workspace / "a.txt").read_text() == "hello there\n"


def test_a_refused_change_exits_1_and_names_the_reason(workspace: Path) -> None:
    (workspace / "a.txt").write_text("current\n")
    change = {"path": "a.txt", "pre_image_sha256": "0" * 64, "new_content": "new\n"}
    done = run_script(request(workspace, change))
    assert done.returncode == 1
    outcome = CommitOutcome.model_validate_json(done.stdout)
    assert outcome.code == "FILE_CHANGED"
    assert b"FILE_CHANGED" in done.stderr
    assert (workspace / "a.txt").read_text() == "current\n"


def test_a_path_outside_the_workspace_exits_1(workspace: Path) -> None:
    done = run_script(request(workspace, {"path": "../x.txt", "pre_image_sha256": None, "new_content": "x"}))
    assert done.returncode == 1
    assert CommitOutcome.model_validate_json(done.stdout).code == "OUTSIDE_WORKSPACE"
    assert not (workspace.parent / "x.txt").exists()


@pytest.mark.parametrize(
    ("stdin", "expected"),
    [
        (b"{not json", "not valid JSON"),
        (b"", "stdin was empty"),
        (b"[1, 2]", "object"),
        (
            b'{"workspace": "relative/dir", "change": {"path": "a", "pre_image_sha256": null, "new_content": "x"}}',
            "absolute",
        ),
        (b'{"workspace": "/tmp"}', "change"),
        (
            b'{"workspace": "/tmp", "change": {"path": "a", "pre_image_sha256": null}}',
            "either edits or new_content",
        ),
        (
            b'{"workspace": "/tmp", "change": {"path": "a", "pre_image_sha256": null, "new_content": "x"}, "x": 1}',
            "x",
        ),
    ],
)
def test_a_malformed_request_exits_2_with_a_clear_message(
    stdin: bytes, expected: str, tmp_path: Path
) -> None:
    done = run_script(stdin)
    assert done.returncode == 2
    stderr = done.stderr.decode()
    assert stderr.startswith("seepient-fs-commit: malformed request:")
    assert expected in stderr
    assert '{"workspace": "/absolute/root", "change": {FileChange}}' in stderr
    assert CommitOutcome.model_validate_json(done.stdout).code == "INVALID"
