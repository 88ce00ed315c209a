"""read_file against a real workspace through the real path guard and local executor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seepient.protocol import ActionKind, ReadAction
from seepient.tools.builtin import ReadFileTool
from tests.approved import approve

TOOL = ReadFileTool()


async def test_prepare_describes_the_read_without_touching_the_host(
    workspace: Path, prepare: Any, recorder: Any
) -> None:
    (workspace / "calc.py").write_text("x = 1\n")
    draft = await prepare(TOOL, path="calc.py", offset=10, limit=5)
    assert draft.kind is ActionKind.READ and draft.read_only
    assert isinstance(draft.payload, ReadAction)
    assert draft.payload.operation == "read_file"
    assert draft.payload.paths == (str(workspace / "calc.py"),)
    assert draft.summary == "Read calc.py (lines 10\u201314)"
    assert recorder.calls == []


async def test_lines_are_numbered_like_cat_n(workspace: Path, run: Any) -> None:
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    _, out = await run(TOOL, path="calc.py")
    assert not out.is_error
    assert out.text == "     1\tdef add(a, b):\n     2\t    return a - b"
    assert out.data["total_lines"] == 2


async def test_offset_is_a_line_number_and_limit_a_line_count(workspace: Path, run: Any) -> None:
    (workspace / "long.txt").write_text("".join(f"row {n}\n" for n in range(1, 101)))
    _, out = await run(TOOL, path="long.txt", offset=10, limit=5)
    lines = out.text.split("\n")
    assert lines[:5] == [f"{n:>6}\trow {n}" for n in range(10, 15)]
    assert "Showing lines 10\u201314 of 100" in out.text and "offset=15" in out.text


async def test_default_limit_stops_at_2000_lines_and_says_how_to_continue(workspace: Path, run: Any) -> None:
    (workspace / "big.txt").write_text("".join(f"{n}\n" for n in range(1, 2501)))
    _, out = await run(TOOL, path="big.txt")
    assert out.text.split("\n")[1999] == f"{2000:>6}\t2000"
    assert f"{2001:>6}\t" not in out.text
    assert "offset=2001" in out.text


async def test_wide_files_stop_early_within_the_result_budget(workspace: Path, run: Any) -> None:
    (workspace / "wide.txt").write_text("".join(f"{n:04d}" + "w" * 1500 + "\n" for n in range(1, 201)))
    _, out = await run(TOOL, path="wide.txt")
    assert len(out.text) <= TOOL.max_result_chars
    last = out.data["last_line"]
    assert 10 < last < 200
    assert f"Use offset={last + 1} to read more" in out.text


async def test_very_long_lines_are_cut_with_a_note(workspace: Path, run: Any) -> None:
    (workspace / "min.js").write_text("a" * 5000 + "\nshort\n")
    _, out = await run(TOOL, path="min.js")
    first, second = out.text.split("\n")[:2]
    assert first == f"{1:>6}\t" + "a" * 2000 + "… [line cut: 3000 more characters]"
    assert second == f"{2:>6}\tshort"


async def test_crlf_files_show_without_carriage_returns(workspace: Path, run: Any) -> None:
    (workspace / "win.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    _, out = await run(TOOL, path="win.txt")
    assert out.text == "     1\tone\n     2\ttwo"


async def test_offset_past_the_end_is_an_error_naming_the_length(workspace: Path, run: Any) -> None:
    (workspace / "short.txt").write_text("a\nb\nc\n")
    _, out = await run(TOOL, path="short.txt", offset=9)
    assert out.is_error and "has 3 lines" in out.text and "offset 9" in out.text


async def test_empty_file_says_so(workspace: Path, run: Any) -> None:
    (workspace / "empty.txt").write_bytes(b"")
    _, out = await run(TOOL, path="empty.txt")
    assert not out.is_error and "empty" in out.text


async def test_binary_files_are_refused(workspace: Path, run: Any) -> None:
    (workspace / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    _, out = await run(TOOL, path="image.png")
    assert out.is_error and "NUL bytes" in out.text and "binary" in out.text
    (workspace / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    _, out = await run(TOOL, path="latin1.txt")
    assert out.is_error and "not valid UTF-8" in out.text


async def test_a_missing_file_suggests_glob(workspace: Path, run: Any) -> None:
    _, out = await run(TOOL, path="src/nothere.py")
    assert out.is_error
    assert "File not found: src/nothere.py" in out.text and "glob" in out.text and "**/nothere.py" in out.text


async def test_a_directory_is_refused_pointing_at_glob(workspace: Path, run: Any) -> None:
    (workspace / "pkg").mkdir()
    _, out = await run(TOOL, path="pkg")
    assert out.is_error and "is a directory" in out.text and "glob" in out.text


async def test_execute_reads_what_was_approved_not_what_is_asked_later(
    workspace: Path, prepare: Any, ctx: Any, recorder: Any
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    draft = await prepare(TOOL, path="a.txt")
    (workspace / "a.txt").write_text("alpha changed\n")
    out = await TOOL.execute(approve(draft), ctx)
    assert out.text == "     1\talpha changed"
    assert recorder.calls == [("read_file", (str(workspace / "a.txt"),))]
