"""Reading, globbing and grepping through the LocalExecutor: ignore files count (also outside git), `.git`,
symlinks and binary files are skipped, ripgrep and the pure-Python fallback give the same answers, and a
read never follows a symlink swapped in after the path guard resolved the path."""

from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seepient.execution.local import LocalExecutor
from seepient.execution.search import find_ripgrep, glob_regex
from seepient.protocol import FileChange
from tests.approved import commit


@pytest.fixture
def tree(tmp_path: Path, outside_dir: Path) -> Path:
    """A project that is not a git repository, with ignore files at several levels and one above it."""
    (tmp_path / ".gitignore").write_text("from-parent.txt\n")
    root = tmp_path / "proj"
    files = {
        ".gitignore": "build/\n*.log\n!keep.log\n/root-only.txt\n",
        "README.md": "Needle in the readme\nsecond line\n",
        "main.py": "import os\nneedle = 1\nprint(needle)\n",
        "src/app.py": "def needle():\n    return 'NEEDLE'\n",
        "src/util.ts": "export const needle = 2;\r\nexport const other = 3;\r\n",
        "src/deep/inner.py": "# nothing here\n",
        "src/deep/.gitignore": "generated.py\n",
        "src/deep/generated.py": "needle = 'generated'\n",
        "src/root-only.txt": "needle not anchored here\n",
        "root-only.txt": "needle anchored at the root\n",
        "build/out.py": "needle = 'built'\n",
        "debug.log": "needle in a log\n",
        "keep.log": "needle in a kept log\n",
        "from-parent.txt": "needle ignored by the parent\n",
        ".hidden/conf.py": "needle = 'hidden'\n",
        ".git/config": "needle in git internals\n",
        ".ignore": "scratch/\n",
        "scratch/tmp.py": "needle scratch\n",
        "docs/a.md": "a needle\nneedle again\nno\n",
    }
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode())
    (root / "blob.bin").write_bytes(b"needle\x00\x01\x02")
    secret = outside_dir / "secret.txt"
    secret.write_text("needle outside the workspace\n")
    (root / "link-to-secret.txt").symlink_to(secret)
    (root / "link-to-outside-dir").symlink_to(outside_dir)
    # Distinct modification times in the future (newer than every other file), so "newest first" is checkable.
    for age, relative in enumerate(
        reversed(["docs/a.md", "main.py", "src/app.py", "README.md", "src/util.ts"])
    ):
        os.utime(root / relative, ns=(2_000_000_000_000_000_000 - age * 10**9,) * 2)
    return root


def make_executor(root: Path, fake_home: Path, *, ripgrep: str | None | str = "auto") -> LocalExecutor:
    return LocalExecutor(root, seepient_home=fake_home / ".seepient", home=fake_home, ripgrep=ripgrep)  # type: ignore[arg-type]


def test_ripgrep_is_found_next_to_the_interpreter() -> None:
    found = find_ripgrep()
    assert found == str(Path(sysconfig.get_path("scripts")) / "rg")
    assert subprocess.run([found, "--version"], capture_output=True).returncode == 0


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "main.py", True),
        ("*.py", "src/app.py", False),
        ("**/*.py", "src/app.py", True),
        ("**/*.py", "main.py", True),
        ("src/**", "src/a/b/c.txt", True),
        ("src/**/*.py", "src/app.py", True),
        ("src/**/*.py", "src/x/y/app.py", True),
        ("src/*.py", "src/x/app.py", False),
        ("*.{ts,tsx}", "a.tsx", True),
        ("*.{ts,tsx}", "a.js", False),
        ("file?.txt", "file1.txt", True),
        ("file?.txt", "file10.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("./main.py", "main.py", True),
        ("a+b(c).txt", "a+b(c).txt", True),
    ],
)
def test_glob_pattern_semantics(pattern: str, path: str, matches: bool) -> None:
    assert (glob_regex(pattern).match(path) is not None) is matches


async def test_glob_honours_ignore_files_and_lists_newest_first(tree: Path, fake_home: Path) -> None:
    executor = make_executor(tree, fake_home)
    found = await executor.reads.glob(str(tree), "**/*")
    assert found[:5] == ["src/util.ts", "README.md", "src/app.py", "main.py", "docs/a.md"]
    assert set(found) == {
        ".gitignore", ".ignore", "README.md", "main.py", "src/app.py", "src/util.ts", "src/deep/inner.py",
        "src/deep/.gitignore", "src/root-only.txt", "keep.log", ".hidden/conf.py", "docs/a.md", "blob.bin",
    }  # fmt: skip
    assert await executor.reads.glob(str(tree), "**/*.py", limit=2) == ["src/app.py", "main.py"]


async def test_glob_without_ignore_rules_still_skips_git_and_symlinks(tree: Path, fake_home: Path) -> None:
    found = await make_executor(tree, fake_home).reads.glob(str(tree), "**/*", respect_ignore=False)
    assert {
        "build/out.py",
        "debug.log",
        "from-parent.txt",
        "root-only.txt",
        "scratch/tmp.py",
        "src/deep/generated.py",
    } <= set(found)
    assert not [f for f in found if f.startswith(".git/") or f.startswith("link-")]


async def test_glob_in_a_subdirectory_applies_the_ignore_files_above_it(tree: Path, fake_home: Path) -> None:
    executor = make_executor(tree, fake_home)
    assert await executor.reads.glob(str(tree), "src/deep/*.py") == ["src/deep/inner.py"]
    assert await executor.reads.glob(str(tree), "build/*.py") == []
    assert await executor.reads.glob(str(tree / "src"), "**/*.py") == ["app.py", "deep/inner.py"]


GREP_CASES = [
    ("needle", None, False, "files_with_matches"),
    ("needle", None, False, "content"),
    ("needle", None, False, "count"),
    ("needle", None, True, "content"),
    ("needle", "*.py", True, "files_with_matches"),
    ("needle", "src/*.py", False, "content"),
    ("needle", "!*.py", False, "files_with_matches"),
    ("needle", "*.{md,ts}", True, "count"),
    ("needle = \\d+;?$", None, False, "content"),
    ("^export", None, False, "count"),
    ("nothing matches this", None, False, "content"),
    ("needle", "*.log", False, "files_with_matches"),  # a --glob outranks .gitignore for files...
    ("needle", "generated.py", False, "content"),
    ("needle", "build/*.py", False, "files_with_matches"),  # ...but not for the directories it prunes
    ("needle", "!src", False, "files_with_matches"),
    ("needle", "**/deep/*", False, "files_with_matches"),
]


@pytest.mark.parametrize(("pattern", "glob", "ignore_case", "mode"), GREP_CASES)
async def test_ripgrep_and_the_python_fallback_agree(
    tree: Path, fake_home: Path, pattern: str, glob: str | None, ignore_case: bool, mode: str
) -> None:
    with_rg = make_executor(tree, fake_home)
    without_rg = make_executor(tree, fake_home, ripgrep=None)
    fast = await with_rg.reads.grep(str(tree), pattern, glob=glob, ignore_case=ignore_case, output_mode=mode)  # type: ignore[arg-type]
    slow = await without_rg.reads.grep(
        str(tree), pattern, glob=glob, ignore_case=ignore_case, output_mode=mode
    )  # type: ignore[arg-type]
    assert (fast.engine, slow.engine) == ("ripgrep", "python")
    assert fast.lines == slow.lines
    assert fast.truncated == slow.truncated


@pytest.mark.parametrize("ripgrep", ["auto", None])
async def test_grep_results(tree: Path, fake_home: Path, ripgrep: str | None) -> None:
    executor = make_executor(tree, fake_home, ripgrep=ripgrep)
    files = await executor.reads.grep(str(tree), "needle")
    # Ignored (also by the parent's .gitignore, outside any git repository), `.git`, binary and symlinked
    # files are not searched; hidden files are.
    assert files.lines == (
        ".hidden/conf.py",
        "docs/a.md",
        "keep.log",
        "main.py",
        "src/app.py",
        "src/root-only.txt",
        "src/util.ts",
    )
    content = await executor.reads.grep(str(tree), "needle", glob="*.md", output_mode="content")
    assert content.lines == ("docs/a.md:1:a needle", "docs/a.md:2:needle again")
    counts = await executor.reads.grep(str(tree), "needle", output_mode="count", ignore_case=True)
    assert "README.md:1" in counts.lines and "main.py:2" in counts.lines and "src/app.py:2" in counts.lines
    crlf = await executor.reads.grep(str(tree), "= 2;$", output_mode="content")
    assert crlf.lines == ("src/util.ts:1:export const needle = 2;",)


@pytest.mark.parametrize("ripgrep", ["auto", None])
async def test_grep_limit_marks_truncation(tree: Path, fake_home: Path, ripgrep: str | None) -> None:
    executor = make_executor(tree, fake_home, ripgrep=ripgrep)
    limited = await executor.reads.grep(str(tree), "needle", limit=3)
    assert limited.lines == (".hidden/conf.py", "docs/a.md", "keep.log")
    assert limited.truncated
    assert not (await executor.reads.grep(str(tree), "needle", limit=7)).truncated


@pytest.mark.parametrize("ripgrep", ["auto", None])
async def test_grep_rejects_an_invalid_pattern(tree: Path, fake_home: Path, ripgrep: str | None) -> None:
    with pytest.raises(ValueError, match="invalid regular expression"):
        await make_executor(tree, fake_home, ripgrep=ripgrep).reads.grep(str(tree), "(unclosed")


async def test_grep_ignores_a_ripgrep_config_that_names_a_preprocessor(
    tree: Path, fake_home: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "pre-ran"
    config = tmp_path / "rgrc"
    config.write_text(f"--pre={tmp_path / 'pre.sh'}\n")
    (tmp_path / "pre.sh").write_text(f'#!/bin/sh\ntouch {marker}\ncat "$1"\n')
    (tmp_path / "pre.sh").chmod(0o755)
    executor = LocalExecutor(
        tree,
        seepient_home=fake_home / ".seepient",
        home=fake_home,
        environ={"PATH": os.environ["PATH"], "RIPGREP_CONFIG_PATH": str(config)},
    )
    assert (await executor.reads.grep(str(tree), "needle")).lines
    assert not marker.exists()


async def test_read_file_returns_bytes_and_the_usual_errors(tree: Path, fake_home: Path) -> None:
    executor = make_executor(tree, fake_home)
    assert await executor.reads.read_file(str(tree / "main.py")) == b"import os\nneedle = 1\nprint(needle)\n"
    outside = Path(os.path.realpath(__file__))
    assert await executor.reads.read_file(str(outside)) == outside.read_bytes()
    with pytest.raises(FileNotFoundError):
        await executor.reads.read_file(str(tree / "missing.txt"))
    with pytest.raises(IsADirectoryError):
        await executor.reads.read_file(str(tree / "src"))
    with pytest.raises(ValueError):
        await executor.reads.read_file("main.py")
    with pytest.raises(ValueError):
        await executor.reads.read_file(str(tree / "src" / ".." / "main.py"))


async def test_read_file_refuses_symlinks_swapped_in_after_the_check(
    tree: Path, fake_home: Path, outside_dir: Path
) -> None:
    executor = make_executor(tree, fake_home)
    # Policy resolved tree/notes.txt to itself (a plain file); then the file became a symlink to a secret.
    (tree / "notes.txt").symlink_to(outside_dir / "secret.txt")
    with pytest.raises(PermissionError, match="symbolic link"):
        await executor.reads.read_file(str(tree / "notes.txt"))
    # Same through a parent directory.
    (outside_dir / "d").mkdir()
    (outside_dir / "d" / "key").write_text("secret")
    (tree / "dir").symlink_to(outside_dir / "d")
    with pytest.raises(PermissionError, match="symbolic link"):
        await executor.reads.read_file(str(tree / "dir" / "key"))


async def test_read_file_refuses_a_fifo_without_hanging(tree: Path, fake_home: Path) -> None:
    os.mkfifo(tree / "pipe")
    with pytest.raises(PermissionError, match="regular file"):
        await make_executor(tree, fake_home).reads.read_file(str(tree / "pipe"))


async def test_commit_file_goes_through_the_commit_helper(tree: Path, fake_home: Path) -> None:
    outcome = await commit(
        make_executor(tree, fake_home),
        FileChange(path="new/file.txt", pre_image_sha256=None, new_content="x\n"),
    )
    assert outcome.ok
    assert (tree / "new" / "file.txt").read_text() == "x\n"


_NAMES = st.sampled_from(["a.py", "b.txt", "c.log", ".d", "e.md", "out", "keep.log"])
_DIRS = st.sampled_from(["", "src/", "src/x/", "build/", ".cfg/", "out/"])
_IGNORE_LINES = st.sampled_from(
    ["*.log", "!keep.log", "build/", "/a.py", "src/x/", "out", "*.md", "!e.md", "#c", ".d"]
)
_LINES = st.sampled_from(["needle", "Needle here", "nothing", "needle needle", "", "x = needle;", "NEEDLE"])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    files=st.dictionaries(st.tuples(_DIRS, _NAMES), st.lists(_LINES, max_size=4), min_size=1, max_size=10),
    ignores=st.dictionaries(
        st.sampled_from(["", "src/", "src/x/"]), st.lists(_IGNORE_LINES, max_size=4), max_size=3
    ),
    glob=st.sampled_from([None, "*.py", "!*.log", "src/**", "*.{md,txt}"]),
    ignore_case=st.booleans(),
    mode=st.sampled_from(["content", "files_with_matches", "count"]),
)
async def test_engines_agree_on_generated_trees(
    tmp_path_factory: pytest.TempPathFactory,
    fake_home: Path,
    files: dict[tuple[str, str], list[str]],
    ignores: dict[str, list[str]],
    glob: str | None,
    ignore_case: bool,
    mode: str,
) -> None:
    root = tmp_path_factory.mktemp("generated")
    for (directory, name), lines in files.items():
        path = root / directory / name
        if path.parent.is_file() or path.is_dir():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + ("\n" if lines else ""))
    for directory, lines in ignores.items():
        (root / directory).mkdir(parents=True, exist_ok=True)
        (root / directory / ".gitignore").write_text("\n".join(lines) + "\n")
    with_rg = make_executor(root, fake_home)
    without_rg = make_executor(root, fake_home, ripgrep=None)
    fast = await with_rg.reads.grep(str(root), "needle", glob=glob, ignore_case=ignore_case, output_mode=mode)  # type: ignore[arg-type]
    slow = await without_rg.reads.grep(
        str(root), "needle", glob=glob, ignore_case=ignore_case, output_mode=mode
    )  # type: ignore[arg-type]
    assert fast.lines == slow.lines


# -- ignore files that are not files (red team, after issue 16) -----------------------------------------------
# The search reads every folder's ignore files on the host. A FIFO named .gitignore hung the Python search for
# good, and a link to /dev/zero made it (and ripgrep) read without end; the control guard undoes such a link
# planted by a jailed command (tests/execution/test_control_guard.py), and the Python search reads only a
# regular file of bounded size whatever is there.


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge"])
async def test_the_python_search_reads_only_regular_ignore_files(
    tree: Path, fake_home: Path, kind: str
) -> None:
    import asyncio

    ignore = tree / "src" / ".ignore"
    if kind == "fifo":
        os.mkfifo(ignore)
    elif kind == "dev-zero":
        ignore.symlink_to("/dev/zero")
    else:
        ignore.write_text("main.py\n" + "x" * (2 << 20))
    executor = make_executor(tree, fake_home, ripgrep=None)
    async with asyncio.timeout(20):
        found = await executor.reads.grep(str(tree), "needle")
    assert any(line.endswith("main.py") for line in found.lines), found
