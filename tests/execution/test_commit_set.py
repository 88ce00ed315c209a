"""The all-or-nothing commit of several file changes: every check passes before anything is renamed, and a
failure part-way through the renames is undone from the backups, leaving no temp file behind."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from seepient.execution import commit_set
from seepient.execution.commit import commit_change
from seepient.execution.commit_set import commit_changes
from seepient.protocol import FileChange, FileChangeSet
from tests.approved import commit


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _leftovers(root: Path) -> list[str]:
    return [str(p) for p in root.rglob(".seepient-commit-*")]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "keep.txt").write_text("keep\n")
    (root / "edit.txt").write_text("old\n")
    (root / "gone.txt").write_text("bye\n")
    os.chmod(root / "edit.txt", 0o640)
    return root


def _changes(root: Path) -> tuple[FileChange, ...]:
    return (
        FileChange(path="edit.txt", pre_image_sha256=_sha(b"old\n"), new_content="new\n"),
        FileChange(path="deep/er/made.txt", pre_image_sha256=None, new_content="made\n"),
        FileChange(path="gone.txt", pre_image_sha256=_sha(b"bye\n"), delete=True),
    )


def test_all_changes_land_together(ws: Path) -> None:
    outcome = commit_changes(ws, _changes(ws))
    assert outcome.ok, outcome
    assert _tree(ws) == {"keep.txt": b"keep\n", "edit.txt": b"new\n", "deep/er/made.txt": b"made\n"}
    assert os.stat(ws / "edit.txt").st_mode & 0o777 == 0o640  # the replaced file keeps its mode
    assert _leftovers(ws) == []
    assert "deleted gone.txt" in outcome.message and "created deep/er/made.txt" in outcome.message


@pytest.mark.parametrize("which", ["edit.txt", "gone.txt", "created"])
def test_any_stale_pre_image_changes_nothing(ws: Path, which: str) -> None:
    if which == "created":
        (ws / "deep" / "er").mkdir(parents=True)
        (ws / "deep" / "er" / "made.txt").write_text("someone else's\n")
    else:
        (ws / which).write_text("moved on\n")
    before = _tree(ws)
    outcome = commit_changes(ws, _changes(ws))
    assert outcome.code == "FILE_CHANGED"
    assert outcome.path == ("deep/er/made.txt" if which == "created" else which)
    assert _tree(ws) == before and _leftovers(ws) == []
    if which != "created":
        assert not (ws / "deep").exists()  # directories made for the set are removed again


def test_a_failure_between_renames_is_rolled_back(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault injection at the one seam that matters: after the first rename landed, the next file is
    changed in place by someone else; the last-moment check refuses it and the first file gets its old
    inode back."""
    real = commit_set._apply_step
    applied: list[str] = []

    def apply_and_interfere(step: commit_set._Step) -> None:
        if applied:
            (ws / "gone.txt").write_text("written in place meanwhile\n")
        real(step)
        applied.append(step.display)

    monkeypatch.setattr(commit_set, "_apply_step", apply_and_interfere)
    inode = os.stat(ws / "edit.txt").st_ino
    changes = (
        FileChange(path="edit.txt", pre_image_sha256=_sha(b"old\n"), new_content="new\n"),
        FileChange(path="gone.txt", pre_image_sha256=_sha(b"bye\n"), delete=True),
    )
    outcome = commit_changes(ws, changes)
    assert outcome.code == "FILE_CHANGED" and outcome.path == "gone.txt"
    assert applied == ["edit.txt"]
    assert (ws / "edit.txt").read_text() == "old\n" and os.stat(ws / "edit.txt").st_ino == inode
    assert (ws / "gone.txt").read_text() == "written in place meanwhile\n"
    assert _leftovers(ws) == []


def test_an_os_error_between_renames_is_rolled_back(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = commit_set._apply_step
    calls = 0

    def fail_third(step: commit_set._Step) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise OSError(28, "No space left on device")
        real(step)

    monkeypatch.setattr(commit_set, "_apply_step", fail_third)
    before = _tree(ws)
    outcome = commit_changes(ws, _changes(ws))
    assert outcome.code == "ERROR" and outcome.path == "gone.txt"
    assert "No space left" in outcome.message and "nothing was changed" in outcome.message
    assert _tree(ws) == before and _leftovers(ws) == []
    assert not (ws / "deep").exists()


def test_symlinked_directory_out_of_the_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, ws / "link")
    changes = (
        FileChange(path="edit.txt", pre_image_sha256=_sha(b"old\n"), new_content="new\n"),
        FileChange(path="link/planted.txt", pre_image_sha256=None, new_content="x\n"),
    )
    outcome = commit_changes(ws, changes)
    assert outcome.code == "OUTSIDE_WORKSPACE" and outcome.path == "link/planted.txt"
    assert (ws / "edit.txt").read_text() == "old\n" and list(outside.iterdir()) == []


def test_a_file_that_is_a_symlink_is_not_deleted_through(ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("precious\n")
    os.symlink(target, ws / "alias.txt")
    outcome = commit_changes(
        ws, (FileChange(path="alias.txt", pre_image_sha256=_sha(b"precious\n"), delete=True),)
    )
    assert outcome.code == "OUTSIDE_WORKSPACE"
    assert target.read_text() == "precious\n" and (ws / "alias.txt").is_symlink()


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/passwd-seepient", "a/../../escape.txt"])
def test_paths_outside_are_refused_before_anything(ws: Path, path: str) -> None:
    before = _tree(ws)
    changes = (
        FileChange(path="edit.txt", pre_image_sha256=_sha(b"old\n"), new_content="new\n"),
        FileChange(path=path, pre_image_sha256=None, new_content="x\n"),
    )
    outcome = commit_changes(ws, changes)
    assert outcome.code == "OUTSIDE_WORKSPACE"
    assert _tree(ws) == before and not (ws.parent / "escape.txt").exists()


def test_two_spellings_of_one_path_are_refused(ws: Path) -> None:
    changes = (
        FileChange(path="edit.txt", pre_image_sha256=_sha(b"old\n"), new_content="new\n"),
        FileChange(path="./edit.txt", pre_image_sha256=_sha(b"old\n"), delete=True),
    )
    outcome = commit_changes(ws, changes)
    assert outcome.code == "INVALID" and "more than once" in outcome.message
    assert (ws / "edit.txt").read_text() == "old\n"


def test_deleting_a_directory_is_refused(ws: Path) -> None:
    (ws / "dir").mkdir()
    outcome = commit_changes(ws, (FileChange(path="dir", pre_image_sha256=_sha(b""), delete=True),))
    assert outcome.code == "INVALID" and (ws / "dir").is_dir()


def test_the_single_file_helper_refuses_a_deletion(ws: Path) -> None:
    outcome = commit_change(ws, FileChange(path="gone.txt", pre_image_sha256=_sha(b"bye\n"), delete=True))
    assert outcome.code == "INVALID" and (ws / "gone.txt").exists()


def test_unchanged_content_is_a_no_op_and_still_checked(ws: Path) -> None:
    outcome = commit_changes(
        ws, (FileChange(path="keep.txt", pre_image_sha256=_sha(b"keep\n"), new_content="keep\n"),)
    )
    assert outcome.ok and "keep.txt unchanged" in outcome.message
    stale = commit_changes(
        ws, (FileChange(path="keep.txt", pre_image_sha256=_sha(b"nope"), new_content="keep\n"),)
    )
    assert stale.code == "FILE_CHANGED"


async def test_local_executor_commits_sets(ws: Path, tmp_path: Path) -> None:
    from seepient.execution.local import LocalExecutor

    executor = LocalExecutor(ws, seepient_home=tmp_path / "seepient-home", home=tmp_path)
    outcome = await commit(executor, FileChangeSet(changes=tuple(_changes(ws))))
    assert outcome.ok and not (ws / "gone.txt").exists()


def test_when_undoing_fails_too_the_answer_names_what_changed_and_keeps_the_backup(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = commit_set._apply_step

    def fail_second(step: commit_set._Step) -> None:
        if step.display == "gone.txt":
            raise OSError(5, "Input/output error")
        real(step)

    def rename_fails(*args: object, **kwargs: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(commit_set, "_apply_step", fail_second)
    monkeypatch.setattr(commit_set.os, "rename", rename_fails)
    changes = (
        FileChange(path="edit.txt", pre_image_sha256=_sha(b"old\n"), new_content="new\n"),
        FileChange(path="gone.txt", pre_image_sha256=_sha(b"bye\n"), delete=True),
    )
    outcome = commit_changes(ws, changes)
    monkeypatch.undo()
    assert outcome.code == "ERROR" and outcome.path == "edit.txt"
    assert "undoing it failed too" in outcome.message and "Input/output error" in outcome.message
    (backup,) = _leftovers(ws)
    assert Path(backup).name in outcome.message and Path(backup).read_text() == "old\n"
    assert (ws / "edit.txt").read_text() == "new\n" and (ws / "gone.txt").read_text() == "bye\n"
