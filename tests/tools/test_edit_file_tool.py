"""edit_file: exact, unique search and replace; misses point at the closest region; CRLF files work."""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from seepient.protocol import EditBlock, FileChange
from seepient.tools.base import ToolInputError
from seepient.tools.builtin import EditFileTool
from tests.approved import approve

TOOL = EditFileTool()

CALC = """\
import math


def add(a, b):
    return a - b


def mul(a, b):
    return a * b


def area(r):
    return math.pi * r * r
"""


async def test_a_unique_edit_is_prepared_with_pre_image_and_diff_then_committed(
    workspace: Path, run: Any
) -> None:
    target = workspace / "calc.py"
    target.write_text(CALC)
    draft, out = await run(TOOL, path="calc.py", old_string="return a - b", new_string="return a + b")
    change = draft.payload
    assert isinstance(change, FileChange)
    assert change.pre_image_sha256 == hashlib.sha256(CALC.encode()).hexdigest()
    assert change.edits == (EditBlock(search="return a - b", replace="return a + b"),)
    assert change.new_content is None
    assert "-    return a - b\n+    return a + b\n" in change.diff
    assert draft.summary == "Edit calc.py (+1 \u22121)"
    assert not out.is_error and out.text == "Edited calc.py (+1 \u22121)."
    assert target.read_text() == CALC.replace("return a - b", "return a + b")


async def test_a_miss_shows_the_closest_region_with_line_numbers(workspace: Path, prepare: Any) -> None:
    (workspace / "calc.py").write_text(CALC)
    with pytest.raises(ToolInputError) as caught:
        await prepare(TOOL, path="calc.py", old_string="def mul(a, b):\n    return a ** b\n", new_string="x")
    message = str(caught.value)
    assert message.startswith("old_string was not found in calc.py; nothing was changed.")
    assert "is at lines 8\u20139:" in message
    assert "     8\tdef mul(a, b):\n     9\t    return a * b" in message
    assert (workspace / "calc.py").read_text() == CALC


async def test_a_whitespace_only_miss_is_named(workspace: Path, prepare: Any) -> None:
    (workspace / "calc.py").write_text(CALC)
    with pytest.raises(ToolInputError, match="only in whitespace"):
        await prepare(TOOL, path="calc.py", old_string="def add(a, b):\n  return a - b", new_string="x")


async def test_a_miss_with_read_file_prefixes_says_to_drop_them(workspace: Path, prepare: Any) -> None:
    (workspace / "calc.py").write_text(CALC)
    with pytest.raises(ToolInputError, match="line-number prefixes"):
        await prepare(TOOL, path="calc.py", old_string="     5\t    return a - b", new_string="x")


async def test_a_miss_with_nothing_similar_does_not_invent_a_region(workspace: Path, prepare: Any) -> None:
    (workspace / "calc.py").write_text(CALC)
    with pytest.raises(ToolInputError) as caught:
        await prepare(TOOL, path="calc.py", old_string="SELECT * FROM users WHERE id = 7;", new_string="x")
    assert "resembles it closely" in str(caught.value) and "closest match" not in str(caught.value)


async def test_a_non_unique_edit_says_how_many_and_where(workspace: Path, prepare: Any) -> None:
    (workspace / "calc.py").write_text(CALC)
    with pytest.raises(ToolInputError) as caught:
        await prepare(TOOL, path="calc.py", old_string="(a, b):", new_string="(a, b, c):")
    message = str(caught.value)
    assert "occurs 2 times in calc.py (at lines 4, 8)" in message and "replace_all" in message


async def test_overlapping_occurrences_count_as_ambiguous(workspace: Path, prepare: Any) -> None:
    (workspace / "a.txt").write_text("aaa\n")
    with pytest.raises(ToolInputError, match="occurs 2 times"):
        await prepare(TOOL, path="a.txt", old_string="aa", new_string="b")


async def test_replace_all_changes_every_occurrence(workspace: Path, run: Any) -> None:
    (workspace / "calc.py").write_text(CALC)
    draft, out = await run(TOOL, path="calc.py", old_string="(a, b)", new_string="(x, y)", replace_all=True)
    assert draft.payload.edits[0].replace_all is True
    assert draft.summary == "Edit calc.py (+2 \u22122, 2 occurrences)"
    assert not out.is_error
    assert (workspace / "calc.py").read_text() == CALC.replace("(a, b)", "(x, y)")


async def test_identical_old_and_new_are_refused(workspace: Path, prepare: Any, recorder: Any) -> None:
    (workspace / "calc.py").write_text(CALC)
    with pytest.raises(ToolInputError, match="identical"):
        await prepare(TOOL, path="calc.py", old_string="add", new_string="add")
    assert recorder.calls == []


async def test_crlf_files_are_edited_with_plain_newlines(workspace: Path, run: Any) -> None:
    target = workspace / "win.py"
    target.write_bytes(b"def f():\r\n    return 1\r\n\r\nprint(f())\r\n")
    draft, out = await run(
        TOOL,
        path="win.py",
        old_string="def f():\n    return 1\n",
        new_string="def f():\n    x = 1\n    return x\n",
    )
    assert draft.payload.edits[0].search == "def f():\r\n    return 1\r\n"
    assert not out.is_error
    assert target.read_bytes() == b"def f():\r\n    x = 1\r\n    return x\r\n\r\nprint(f())\r\n"


async def test_an_empty_old_string_creates_a_missing_file(workspace: Path, run: Any) -> None:
    draft, out = await run(TOOL, path="docs/new.md", old_string="", new_string="# Title\n")
    assert draft.payload.pre_image_sha256 is None and draft.payload.new_content == "# Title\n"
    assert draft.summary == "Create docs/new.md (+1 \u22120)"
    assert out.text == "Created docs/new.md (1 lines)."
    assert (workspace / "docs/new.md").read_text() == "# Title\n"


async def test_an_empty_old_string_fills_an_empty_file_but_not_a_full_one(
    workspace: Path, run: Any, prepare: Any
) -> None:
    (workspace / "empty.txt").write_bytes(b"")
    _, out = await run(TOOL, path="empty.txt", old_string="", new_string="now full\n")
    assert not out.is_error and (workspace / "empty.txt").read_text() == "now full\n"
    with pytest.raises(ToolInputError, match="old_string is empty but empty.txt is not"):
        await prepare(TOOL, path="empty.txt", old_string="", new_string="again\n")


async def test_editing_a_missing_file_points_at_write_file_and_glob(prepare: Any) -> None:
    with pytest.raises(ToolInputError) as caught:
        await prepare(TOOL, path="nothere.py", old_string="x", new_string="y")
    assert "File not found: nothere.py" in str(caught.value)
    assert "write_file" in str(caught.value) and "glob" in str(caught.value)


async def test_binary_files_cannot_be_edited(workspace: Path, prepare: Any) -> None:
    (workspace / "blob.bin").write_bytes(b"ab\x00cd")
    with pytest.raises(ToolInputError, match="binary"):
        await prepare(TOOL, path="blob.bin", old_string="ab", new_string="xy")


async def test_an_edit_prepared_before_the_file_changed_does_not_land(
    workspace: Path, prepare: Any, ctx: Any
) -> None:
    target = workspace / "calc.py"
    target.write_text(CALC)
    draft = await prepare(TOOL, path="calc.py", old_string="return a - b", new_string="return a + b")
    # The search text is still there and still unique: only the pre-image check can stop this commit.
    target.write_text(CALC + "\n# edited by a person\n")
    out = await TOOL.execute(approve(draft), ctx)
    assert out.is_error and out.data["code"] == "FILE_CHANGED"
    assert "Read the file again" in out.text
    assert target.read_text() == CALC + "\n# edited by a person\n"


def _aider_cases(shared_dir: Path) -> list[dict[str, Any]]:
    path = shared_dir / "corpora" / "edit_blocks" / "aider_editblock_cases.jsonl"
    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    chosen = [case for case in cases if case["kind"] == "replace_most_similar_chunk"]
    assert len(chosen) >= 8
    return chosen


async def test_aider_edit_cases_apply_exactly_or_point_at_the_intended_lines(
    workspace: Path, run: Any, prepare: Any, shared_dir: Path
) -> None:
    """Aider's search/replace cases: where the search text occurs once it applies exactly; where Aider
    would have matched loosely (leading whitespace, typos) we refuse, and the closest region we show must
    start at the first line Aider's expected result changed."""
    for number, case in enumerate(_aider_cases(shared_dir)):
        name = f"case{number}.txt"
        (workspace / name).write_text(case["whole"])
        expected = case.get("expected") or case["expected_if_fuzzy_matching"]
        found = case["whole"].count(case["search"])
        if found == 1:
            _, out = await run(TOOL, path=name, old_string=case["search"], new_string=case["replace"])
            assert not out.is_error, case["test"]
            assert (workspace / name).read_text() == expected, case["test"]
            continue
        with pytest.raises(ToolInputError) as caught:
            await prepare(TOOL, path=name, old_string=case["search"], new_string=case["replace"])
        message = str(caught.value)
        if found > 1:
            assert f"occurs {found} times" in message, case["test"]
            continue
        before = case["whole"].splitlines()
        after = expected.splitlines()
        opcodes = [
            op for op in difflib.SequenceMatcher(None, before, after).get_opcodes() if op[0] != "equal"
        ]
        first_changed = opcodes[0][1] + 1
        assert f"is at line {first_changed}" in message or f"is at lines {first_changed}\u2013" in message, (
            case["test"],
            message,
        )
        assert (workspace / name).read_text() == case["whole"]


async def test_a_miss_in_a_large_repetitive_file_finds_the_intended_lines(
    workspace: Path, prepare: Any
) -> None:
    lines = [f"    value_{n} = compute({n * 7919 % 10007}, scale={n % 13})" for n in range(1, 8001)]
    (workspace / "gen.py").write_text("\n".join(lines) + "\n")
    aimed = "\n".join(lines[4999:5004]).replace("compute", "comptue")
    with pytest.raises(ToolInputError) as caught:
        await prepare(TOOL, path="gen.py", old_string=aimed, new_string="x")
    assert "is at lines 5000\u20135004:" in str(caught.value)
    assert f"  5000\t{lines[4999]}" in str(caught.value)
