"""The exact commit helper, every path: created, updated, refused for a changed file, a missing or repeated
search block, a path outside the workspace or through a symlink; modes and owners kept; nothing left behind."""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from seepient.execution import commit as commit_module
from seepient.execution.commit import commit_change
from seepient.protocol import EditBlock, FileChange


def sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def edit(path: str, pre: bytes | str | None, *blocks: tuple[str, str] | EditBlock) -> FileChange:
    edits = tuple(b if isinstance(b, EditBlock) else EditBlock(search=b[0], replace=b[1]) for b in blocks)
    return FileChange(path=path, pre_image_sha256=None if pre is None else sha(pre), edits=edits)


def write(path: str, pre: bytes | str | None, content: str) -> FileChange:
    return FileChange(path=path, pre_image_sha256=None if pre is None else sha(pre), new_content=content)


def snapshot(root: Path) -> dict[str, tuple[bytes | str, int]]:
    """Every entry under ``root`` with its content (or link target) and mode: "nothing changed" made checkable."""
    found: dict[str, tuple[bytes | str, int]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        if path.is_symlink():
            found[str(path.relative_to(root))] = (os.readlink(path), info.st_mode)
        elif path.is_file():
            found[str(path.relative_to(root))] = (path.read_bytes(), info.st_mode)
        else:
            found[str(path.relative_to(root))] = ("<dir>", info.st_mode)
    return found


def no_temp_files(root: Path) -> bool:
    return not [p for p in root.rglob(".seepient-commit-*")]


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_creates_a_new_file_with_missing_parents(workspace: Path, umask_022: None) -> None:
    outcome = commit_change(workspace, write("src/pkg/new.py", None, "print('hi')\n"))
    assert outcome.ok, outcome.message
    target = workspace / "src" / "pkg" / "new.py"
    assert target.read_text() == "print('hi')\n"
    assert outcome.post_image_sha256 == sha(target.read_bytes())
    assert outcome.path == "src/pkg/new.py"
    assert target.stat().st_mode & 0o777 == 0o644
    assert no_temp_files(workspace)


def test_new_file_mode_follows_the_umask(workspace: Path) -> None:
    previous = os.umask(0o077)
    try:
        assert commit_change(workspace, write("private.txt", None, "x")).ok
    finally:
        os.umask(previous)
    assert (workspace / "private.txt").stat().st_mode & 0o777 == 0o600


def test_updates_with_new_content_and_keeps_the_mode(workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o751)
    outcome = commit_change(workspace, write("run.sh", "#!/bin/sh\necho old\n", "#!/bin/sh\necho new\n"))
    assert outcome.ok, outcome.message
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert script.stat().st_mode & 0o7777 == 0o751
    assert outcome.post_image_sha256 == sha("#!/bin/sh\necho new\n")


def test_keeps_the_owner_of_a_file_someone_else_owns(workspace: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail(
            "this test needs root to hand a file to another owner (CI and the dev machines run as root)"
        )
    target = workspace / "theirs.txt"
    target.write_text("a\n")
    os.chown(target, 4321, 4322)
    assert commit_change(workspace, edit("theirs.txt", "a\n", ("a", "b"))).ok
    info = target.stat()
    assert (info.st_uid, info.st_gid) == (4321, 4322)
    assert target.read_text() == "b\n"


def test_applies_edit_blocks_in_order(workspace: Path) -> None:
    original = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b + 0\n"
    (workspace / "calc.py").write_text(original)
    outcome = commit_change(
        workspace,
        edit(
            "calc.py",
            original,
            ("def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n"),
            (" + 0", ""),
        ),
    )
    assert outcome.ok, outcome.message
    assert (
        workspace / "calc.py"
    ).read_text() == "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def test_replace_all_replaces_every_occurrence(workspace: Path) -> None:
    (workspace / "a.txt").write_text("x = 1\nx = 2\nx = 3\n")
    outcome = commit_change(
        workspace,
        edit("a.txt", "x = 1\nx = 2\nx = 3\n", EditBlock(search="x", replace="y", replace_all=True)),
    )
    assert outcome.ok
    assert (workspace / "a.txt").read_text() == "y = 1\ny = 2\ny = 3\n"


def test_a_search_text_that_is_missing_is_not_found_and_nothing_changes(workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    before = snapshot(workspace)
    outcome = commit_change(workspace, edit("a.txt", "alpha\nbeta\n", ("alpha", "ALPHA"), ("gamma", "GAMMA")))
    assert outcome.code == "NOT_FOUND"
    assert "edit block 2" in outcome.message
    assert snapshot(workspace) == before


@pytest.mark.parametrize(("content", "search"), [("same\nsame\n", "same"), ("aaa", "aa")])
def test_a_search_text_that_repeats_is_not_unique(workspace: Path, content: str, search: str) -> None:
    # "aa" in "aaa" occurs at two overlapping places: still ambiguous.
    (workspace / "a.txt").write_text(content)
    before = snapshot(workspace)
    outcome = commit_change(workspace, edit("a.txt", content, (search, "X")))
    assert outcome.code == "NOT_UNIQUE"
    assert snapshot(workspace) == before


def test_empty_search_text_is_invalid(workspace: Path) -> None:
    (workspace / "a.txt").write_text("a")
    assert commit_change(workspace, edit("a.txt", "a", ("", "b"))).code == "INVALID"


def test_edits_to_a_missing_file_are_invalid(workspace: Path) -> None:
    outcome = commit_change(workspace, edit("sub/none.txt", None, ("a", "b")))
    assert outcome.code == "INVALID"
    assert list(workspace.iterdir()) == []  # the parent it would have needed was not left behind


def test_edits_to_a_file_that_is_not_utf8_are_invalid(workspace: Path) -> None:
    data = b"\xff\xfe binary \x00"
    (workspace / "blob.bin").write_bytes(data)
    outcome = commit_change(workspace, edit("blob.bin", data, ("binary", "text")))
    assert outcome.code == "INVALID"
    assert (workspace / "blob.bin").read_bytes() == data


def test_a_file_changed_since_preparation_is_refused_untouched(workspace: Path) -> None:
    target = workspace / "a.txt"
    target.write_text("prepared against this\n")
    change = write("a.txt", "prepared against this\n", "new\n")
    target.write_text("someone else wrote this\n")
    os.utime(target, ns=(1_000_000_000, 1_000_000_000))
    before = snapshot(workspace)
    outcome = commit_change(workspace, change)
    assert outcome.code == "FILE_CHANGED"
    assert snapshot(workspace) == before
    assert target.stat().st_mtime_ns == 1_000_000_000


def test_a_file_that_must_not_exist_but_does_is_refused(workspace: Path) -> None:
    (workspace / "a.txt").write_text("already here\n")
    before = snapshot(workspace)
    outcome = commit_change(workspace, write("a.txt", None, "new\n"))
    assert outcome.code == "FILE_CHANGED"
    assert snapshot(workspace) == before


def test_a_file_that_disappeared_is_refused(workspace: Path) -> None:
    assert commit_change(workspace, write("gone.txt", "was here\n", "new\n")).code == "FILE_CHANGED"
    assert commit_change(workspace, write("gone/deeper.txt", "was here\n", "new\n")).code == "FILE_CHANGED"
    assert list(workspace.iterdir()) == []


def test_identical_content_is_ok_without_a_write(workspace: Path) -> None:
    target = workspace / "a.txt"
    target.write_text("same\n")
    inode = target.stat().st_ino
    outcome = commit_change(workspace, write("a.txt", "same\n", "same\n"))
    assert outcome.ok and outcome.post_image_sha256 == sha("same\n")
    assert target.stat().st_ino == inode


def test_an_absolute_path_inside_the_workspace_is_accepted(workspace: Path) -> None:
    assert commit_change(workspace, write(str(workspace / "abs.txt"), None, "x")).ok
    assert (workspace / "abs.txt").read_text() == "x"


@pytest.mark.parametrize("path", ["../escape.txt", "sub/../../escape.txt", "/etc/seepient-escape.txt"])
def test_paths_outside_the_workspace_are_refused(workspace: Path, path: str) -> None:
    (workspace / "sub").mkdir()
    outcome = commit_change(workspace, write(path, None, "pwned"))
    assert outcome.code == "OUTSIDE_WORKSPACE"
    assert not (workspace.parent / "escape.txt").exists()
    assert not Path("/etc/seepient-escape.txt").exists()


@pytest.mark.parametrize("path", ["", ".", "./", "a\0b"])
def test_paths_naming_no_file_are_invalid(workspace: Path, path: str) -> None:
    assert commit_change(workspace, write(path, None, "x")).code == "INVALID"


def test_a_symlink_at_the_target_is_refused_and_its_target_untouched(
    workspace: Path, outside_dir: Path
) -> None:
    outside = outside_dir / "victim.txt"
    outside.write_text("victim\n")
    (workspace / "link.txt").symlink_to(outside)
    # The pre-image matches what the symlink shows, as if policy had run before the link was swapped in.
    outcome = commit_change(workspace, write("link.txt", "victim\n", "pwned\n"))
    assert outcome.code == "OUTSIDE_WORKSPACE"
    assert outside.read_text() == "victim\n"
    assert (workspace / "link.txt").is_symlink()


def test_a_dangling_symlink_for_a_new_file_is_refused(workspace: Path, outside_dir: Path) -> None:
    (workspace / "new.txt").symlink_to(outside_dir / "created-through-link.txt")
    outcome = commit_change(workspace, write("new.txt", None, "pwned\n"))
    assert outcome.code == "OUTSIDE_WORKSPACE"
    assert not (outside_dir / "created-through-link.txt").exists()


def test_a_parent_swapped_for_a_symlink_is_refused(workspace: Path, outside_dir: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.txt").write_text("same bytes\n")
    change = write("src/a.txt", "same bytes\n", "pwned\n")
    # After policy approved src/a.txt, the directory is replaced by a symlink to a look-alike outside.
    (outside_dir / "src").mkdir()
    (outside_dir / "src" / "a.txt").write_text("same bytes\n")
    (workspace / "src" / "a.txt").unlink()
    (workspace / "src").rmdir()
    (workspace / "src").symlink_to(outside_dir / "src")
    outcome = commit_change(workspace, change)
    assert outcome.code == "OUTSIDE_WORKSPACE"
    assert (outside_dir / "src" / "a.txt").read_text() == "same bytes\n"
    assert sorted(p.name for p in (outside_dir / "src").iterdir()) == ["a.txt"]


def test_a_symlinked_directory_that_stays_inside_the_workspace_is_followed(workspace: Path) -> None:
    (workspace / "real").mkdir()
    (workspace / "real" / "a.txt").write_text("one\n")
    (workspace / "alias").symlink_to("real")
    outcome = commit_change(workspace, edit("alias/a.txt", "one\n", ("one", "two")))
    assert outcome.ok, outcome.message
    assert (workspace / "real" / "a.txt").read_text() == "two\n"
    assert (workspace / "alias").is_symlink()


def test_a_directory_or_fifo_at_the_path_is_invalid(workspace: Path) -> None:
    (workspace / "adir").mkdir()
    os.mkfifo(workspace / "pipe")
    assert commit_change(workspace, write("adir", None, "x")).code == "INVALID"
    assert commit_change(workspace, write("adir", sha("x"), "x")).code == "INVALID"
    assert commit_change(workspace, write("pipe", sha(""), "x")).code == "INVALID"  # and it did not hang
    assert commit_change(workspace, write("adir/inner/x.txt", None, "x")).ok
    (workspace / "plain").write_text("p")
    assert commit_change(workspace, write("plain/below.txt", None, "x")).code == "INVALID"


def test_a_missing_workspace_is_invalid(tmp_path: Path) -> None:
    assert commit_change(tmp_path / "nowhere", write("a.txt", None, "x")).code == "INVALID"


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_stale_temp_files_of_dead_writers_are_removed_and_live_ones_kept(workspace: Path) -> None:
    stale = workspace / f".seepient-commit-{_dead_pid()}-0123456789abcdef.tmp"
    live = workspace / f".seepient-commit-{os.getpid()}-fedcba9876543210.tmp"
    unrelated = workspace / ".seepient-commit-notes.tmp"
    for path in (stale, live, unrelated):
        path.write_text("half-written")
    assert commit_change(workspace, write("a.txt", None, "x")).ok
    assert not stale.exists()
    assert live.exists() and unrelated.exists()


def test_a_stale_temp_left_after_this_process_last_committed_there_is_removed(workspace: Path) -> None:
    assert commit_change(workspace, write("a.txt", None, "1")).ok
    stale = workspace / f".seepient-commit-{_dead_pid()}-0123456789abcdef.tmp"
    stale.write_text("half-written")
    # Creating the temp file moved the directory's timestamps, unless a coarse kernel clock left them in the
    # same tick as the last commit; setting the mtime makes the change visible on every kernel.
    os.utime(workspace, ns=(1_000_000_000, 1_000_000_000))
    assert commit_change(workspace, write("a.txt", "1", "2")).ok
    assert not stale.exists()


def test_a_stale_temp_hidden_by_unmoved_timestamps_is_removed_once_the_rescan_interval_passes(
    workspace: Path,
) -> None:
    assert commit_change(workspace, write("a.txt", None, "1")).ok
    stale = workspace / f".seepient-commit-{_dead_pid()}-0123456789abcdef.tmp"
    stale.write_text("half-written")
    # The blind spot, forced: the memo vouches for the directory exactly as it is now, as if the writer had
    # been killed within the same timestamp tick as this process's last commit here.
    info = os.stat(workspace)
    key = (info.st_dev, info.st_ino)
    assert key in commit_module._scan_memo
    commit_module._scan_memo[key] = (info.st_mtime_ns, info.st_ctime_ns, time.monotonic())
    assert commit_change(workspace, write("a.txt", "1", "2")).ok
    assert stale.exists()  # the scan was skipped, which is what the memo is for
    info = os.stat(workspace)
    long_ago = time.monotonic() - commit_module._RESCAN_AFTER_S
    commit_module._scan_memo[key] = (info.st_mtime_ns, info.st_ctime_ns, long_ago)
    assert commit_change(workspace, write("a.txt", "2", "3")).ok
    assert not stale.exists()
    assert (workspace / "a.txt").read_text() == "3"


def test_concurrent_commits_against_the_same_pre_image_land_once(workspace: Path) -> None:
    target = workspace / "shared.txt"
    for round_number in range(25):
        base = f"base {round_number}\n"
        target.write_text(base)
        outcomes = []
        barrier = threading.Barrier(8)

        def commit(
            number: int, base: str = base, barrier: threading.Barrier = barrier, outcomes: list = outcomes
        ) -> None:
            barrier.wait()
            outcomes.append(commit_change(workspace, write("shared.txt", base, f"writer {number}\n")))

        threads = [threading.Thread(target=commit, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(o.code for o in outcomes) == ["FILE_CHANGED"] * 7 + ["OK"]
        winner = next(o for o in outcomes if o.ok)
        assert sha(target.read_bytes()) == winner.post_image_sha256
    assert no_temp_files(workspace)


@pytest.mark.parametrize(
    ("original", "blocks"),
    [
        ("héllo wörld\n", [("wörld", "world")]),
        ("ünïcode ünïcode\n", [EditBlock(search="ünïcode", replace="ascii", replace_all=True)]),
        ("日本語のテキスト\n終わり\n", [("テキスト", "文章"), ("終わり", "end")]),
        ("a→b→c\n", [("→b", "←B")]),
        ("emoji 🎉 party 🎈\n", [("🎈", "balloon"), ("emoji ", "")]),
    ],
)
def test_edits_on_non_ascii_text_land_exactly_as_on_the_decoded_text(
    workspace: Path, original: str, blocks: list[tuple[str, str] | EditBlock]
) -> None:
    # The reference result is computed on decoded text, the way an editor would see it.
    expected = original
    for block in blocks:
        search, replace = (block.search, block.replace) if isinstance(block, EditBlock) else block
        expected = expected.replace(search, replace, -1 if isinstance(block, EditBlock) else 1)
    (workspace / "u.txt").write_text(original, encoding="utf-8")
    outcome = commit_change(workspace, edit("u.txt", original.encode(), *blocks))
    assert outcome.ok, outcome.message
    assert (workspace / "u.txt").read_text(encoding="utf-8") == expected
    assert outcome.post_image_sha256 == sha(expected)


@pytest.mark.parametrize(("content", "search"), [("ééé", "éé"), ("日日日", "日日"), ("né né", "né")])
def test_a_non_ascii_search_text_that_repeats_is_not_unique(
    workspace: Path, content: str, search: str
) -> None:
    (workspace / "a.txt").write_text(content, encoding="utf-8")
    before = snapshot(workspace)
    outcome = commit_change(workspace, edit("a.txt", content.encode(), (search, "X")))
    assert outcome.code == "NOT_UNIQUE"
    assert snapshot(workspace) == before


def test_a_search_text_never_matches_inside_a_multibyte_character(workspace: Path) -> None:
    # "é" is C3 A9 and "©" is C2 A9: a byte search for the tail of one must not find it inside the other.
    (workspace / "a.txt").write_text("café ©\n", encoding="utf-8")
    assert commit_change(workspace, edit("a.txt", "café ©\n".encode(), ("é", "e"))).ok
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "cafe ©\n"


@pytest.mark.parametrize(
    "blocks",
    [
        [("line 0000", "first")],
        [("line 1999", "last")],
        [("line 1000", "middle, and longer than it was")],
        [("line 1500", "later"), ("line 0500", "earlier")],
        [EditBlock(search="line 10", replace="LINE 10", replace_all=True)],
        [("line 0042\n", "")],
    ],
)
def test_the_post_image_hash_is_the_hash_of_the_committed_bytes(
    workspace: Path, blocks: list[tuple[str, str] | EditBlock]
) -> None:
    original = "".join(f"line {n:04d}\n" for n in range(2000))
    (workspace / "big.txt").write_text(original)
    outcome = commit_change(workspace, edit("big.txt", original, *blocks))
    assert outcome.ok, outcome.message
    committed = (workspace / "big.txt").read_bytes()
    assert committed != original.encode()
    assert outcome.post_image_sha256 == sha(committed)


def test_an_empty_file_can_be_rewritten_and_edits_on_it_find_nothing(workspace: Path) -> None:
    (workspace / "empty.txt").write_bytes(b"")
    assert commit_change(workspace, edit("empty.txt", b"", ("a", "b"))).code == "NOT_FOUND"
    outcome = commit_change(workspace, write("empty.txt", b"", "now full\n"))
    assert outcome.ok and outcome.post_image_sha256 == sha("now full\n")
    assert (workspace / "empty.txt").read_text() == "now full\n"


@pytest.mark.parametrize(
    ("content", "blocks"),
    [
        ("alpha\n", [("missing", "x")]),
        ("same\nsame\n", [("same", "x")]),
        ("alpha\n", [("", "x")]),
    ],
)
def test_a_changed_file_is_reported_as_changed_even_when_the_edit_would_fail_too(
    workspace: Path, content: str, blocks: list[tuple[str, str]]
) -> None:
    (workspace / "a.txt").write_text(content)
    before = snapshot(workspace)
    outcome = commit_change(workspace, edit("a.txt", "what the change was prepared against\n", *blocks))
    assert outcome.code == "FILE_CHANGED"
    assert snapshot(workspace) == before


def test_a_changed_binary_file_is_reported_as_changed_not_as_binary(workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\xff\xfe now binary")
    outcome = commit_change(workspace, edit("blob.bin", "text it was prepared against", ("text", "t")))
    assert outcome.code == "FILE_CHANGED"


@pytest.mark.parametrize(
    "change",
    [
        FileChange(path="a.txt", pre_image_sha256=sha("ok\n"), new_content="bad \ud800\n"),
        FileChange(
            path="a.txt", pre_image_sha256=sha("ok\n"), edits=(EditBlock(search="ok", replace="\udfff"),)
        ),
        FileChange(
            path="a.txt", pre_image_sha256=sha("ok\n"), edits=(EditBlock(search="\ud800", replace="x"),)
        ),
    ],
)
def test_text_with_a_lone_surrogate_is_invalid_and_nothing_changes(
    workspace: Path, change: FileChange
) -> None:
    (workspace / "a.txt").write_text("ok\n")
    before = snapshot(workspace)
    outcome = commit_change(workspace, change)
    assert outcome.code == "INVALID"
    assert "surrogate" in outcome.message
    assert snapshot(workspace) == before
