"""glob and grep through the real executor: workspace-relative results, .gitignore honoured, limits noted."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from seepient.protocol import ActionKind, ReadAction
from seepient.tools.base import ToolInputError
from seepient.tools.builtin import GlobTool, GrepTool

GLOB = GlobTool()
GREP = GrepTool()


@pytest.fixture
def project(workspace: Path) -> Path:
    files = {
        "src/app/main.py": "import os\n\ndef main():\n    return os.getcwd()  # TODO tidy\n",
        "src/app/util.py": "def helper():\n    return 'todo later'\n",
        "src/app/data.json": '{"todo": true}\n',
        "docs/guide.md": "# Guide\nNothing to do here.\n",
        "build/generated.py": "# TODO generated, must stay hidden\n",
        "notes.log": "TODO in a log\n",
        ".gitignore": "build/\n*.log\n",
    }
    for name, text in files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    return workspace


@pytest.fixture
def git_project(project: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


async def test_glob_prepare_resolves_the_root(project: Path, prepare: Any, recorder: Any) -> None:
    draft = await prepare(GLOB, pattern="*.py", path="src/app")
    assert draft.kind is ActionKind.READ and draft.read_only
    assert isinstance(draft.payload, ReadAction) and draft.payload.operation == "glob"
    assert draft.payload.paths == (str(project / "src" / "app"),)
    assert draft.summary == "Glob *.py (in src/app)"
    assert recorder.calls == []


@pytest.mark.parametrize("layout", ["plain", "git"])
async def test_glob_lists_workspace_relative_paths_and_honours_gitignore(
    layout: str, project: Path, run: Any
) -> None:
    if layout == "git":
        subprocess.run(["git", "init", "-q", str(project)], check=True)
    _, out = await run(GLOB, pattern="**/*.py")
    assert sorted(out.text.split("\n")) == ["src/app/main.py", "src/app/util.py"]
    _, out = await run(GLOB, pattern="*.py", path="src/app")
    assert sorted(out.text.split("\n")) == ["src/app/main.py", "src/app/util.py"]
    _, out = await run(GLOB, pattern="*.log")
    assert not out.is_error and out.text == "No files match '*.log' in .."


async def test_glob_notes_when_results_were_cut(workspace: Path, run: Any) -> None:
    (workspace / "many").mkdir()
    for n in range(230):
        (workspace / "many" / f"f{n:03d}.txt").write_text("x")
    _, out = await run(GLOB, pattern="many/*.txt")
    listed = [line for line in out.text.split("\n") if line.startswith("many/")]
    assert len(listed) == 200
    assert "Only the first 200 matches are shown" in out.text and out.data["truncated"] is True


@pytest.mark.parametrize("pattern", ["/etc/*", "../*", "src/../../*", "~/.ssh/*"])
async def test_glob_patterns_that_leave_the_root_are_refused(
    pattern: str, prepare: Any, recorder: Any
) -> None:
    with pytest.raises(ToolInputError):
        await prepare(GLOB, pattern=pattern)
    assert recorder.calls == []


async def test_glob_in_a_missing_directory_is_a_clear_error(workspace: Path, run: Any) -> None:
    _, out = await run(GLOB, pattern="*", path="nothere")
    assert out.is_error and "nothere" in out.text


async def test_grep_modes_report_workspace_relative_paths(git_project: Path, run: Any) -> None:
    draft, out = await run(GREP, pattern="TODO")
    assert draft.summary == "Grep 'TODO' (in .)"
    assert out.text == "src/app/main.py"
    _, out = await run(GREP, pattern="todo", ignore_case=True, output_mode="count", path="src")
    assert out.text.split("\n") == ["src/app/data.json:1", "src/app/main.py:1", "src/app/util.py:1"]
    _, out = await run(GREP, pattern=r"return \S+", output_mode="content", path="src/app", glob="*.py")
    assert out.text.split("\n") == [
        "src/app/main.py:4:    return os.getcwd()  # TODO tidy",
        "src/app/util.py:2:    return 'todo later'",
    ]


async def test_grep_skips_gitignored_files_outside_a_git_repository_too(project: Path, run: Any) -> None:
    _, out = await run(GREP, pattern="TODO", output_mode="files_with_matches")
    assert out.text == "src/app/main.py"


async def test_grep_without_matches_and_with_a_bad_pattern(git_project: Path, run: Any) -> None:
    _, out = await run(GREP, pattern="no such text anywhere")
    assert not out.is_error and "No matches" in out.text
    _, out = await run(GREP, pattern="def (unclosed")
    assert out.is_error and "regular expression" in out.text


async def test_grep_notes_when_results_were_cut(workspace: Path, run: Any) -> None:
    (workspace / "big.txt").write_text("hit\n" * 500)
    _, out = await run(GREP, pattern="hit", output_mode="content")
    assert len([line for line in out.text.split("\n") if line.startswith("big.txt:")]) == 300
    assert "Results stop at 300 lines" in out.text and out.data["truncated"] is True


async def test_grep_glob_filters_below_the_root_and_cannot_widen_it(
    workspace: Path, outside: Path, run: Any
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("needle\n")
    (workspace / "b.py").write_text("needle\n")
    _, out = await run(GREP, pattern="needle", glob="/src/*.py")
    assert out.text == "src/a.py"
    for escape in ("../outside/*", "/**/secret.txt", "**/../../outside/*"):
        _, out = await run(GREP, pattern="outside the workspace", glob=escape)
        assert "No matches" in out.text, escape


async def test_grep_on_a_single_file_searches_just_that_file(git_project: Path, run: Any) -> None:
    _, out = await run(GREP, pattern="todo", path="src/app/util.py", output_mode="content")
    assert out.text == "src/app/util.py:2:    return 'todo later'"
    _, out = await run(GREP, pattern="TODO", ignore_case=True, path="src/app/main.py", output_mode="count")
    assert out.text == "src/app/main.py:1"
    _, out = await run(GREP, pattern="absent", path="src/app/main.py")
    assert "No matches" in out.text


async def test_glob_and_grep_name_a_bad_root_plainly(project: Path, run: Any) -> None:
    _, out = await run(GLOB, pattern="*", path="docs/guide.md")
    assert out.is_error and "is a file, not a directory" in out.text
    _, out = await run(GREP, pattern="x", path="nowhere")
    assert out.is_error and "Directory not found: nowhere" in out.text
