"""The patch grammar and hunk matching on their own: what real models send, and clear errors for the rest."""

from __future__ import annotations

import pytest

from seepient.tools.patch_format import AddFile, DeleteFile, PatchError, UpdateFile, apply_hunks, parse_patch


def _update(body: str) -> UpdateFile:
    (operation,) = parse_patch(f"*** Begin Patch\n*** Update File: f.py\n{body}*** End Patch\n")
    assert isinstance(operation, UpdateFile)
    return operation


def _apply(text: str, body: str) -> str:
    return apply_hunks(text, _update(body).hunks, "f.py")


def test_operations_in_order_with_move_and_contents() -> None:
    ops = parse_patch(
        "*** Begin Patch\n*** Add File: a.txt\n+one\n+\n+three\n*** Delete File: b.txt\n"
        "*** Update File: c.txt\n*** Move to: d/c.txt\n@@\n-x\n+y\n*** End Patch"
    )
    assert [type(op) for op in ops] == [AddFile, DeleteFile, UpdateFile]
    assert ops[0].content == "one\n\nthree\n"
    assert ops[2].move_to == "d/c.txt" and ops[2].hunks[0].old_lines == ("x",)


def test_heredoc_wrapper_crlf_and_blank_lines_around_are_accepted() -> None:
    text = (
        "\r\napply_patch <<'EOF'\r\n*** Begin Patch\r\n*** Add File: a\r\n+x\r\n*** End Patch\r\nEOF\r\n\r\n"
    )
    (op,) = parse_patch(text)
    assert isinstance(op, AddFile) and op.content == "x\n"


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("*** Add File: a\n+x\n*** End Patch", "must start with"),
        ("*** Begin Patch\n*** Add File: a\n+x\n", "must end with"),
        ("*** Begin Patch\n*** Add File: a\nx\n*** End Patch", r"line 3: 'x' in an Add File section"),
        ("*** Begin Patch\n*** Update File: a\n@@\n-x\n?y\n*** End Patch", r"line 5: '\?y' in a hunk"),
        ("*** Begin Patch\n*** Update File: a\n@@\n@@\n-x\n*** End Patch", "line 3: the hunk is empty"),
        ("*** Begin Patch\n*** Add File:\n+x\n*** End Patch", "names no path"),
        ("*** Begin Patch\nhello\n*** End Patch", "line 2: 'hello' is not a file operation"),
    ],
)
def test_malformed_patches_say_where(patch: str, message: str) -> None:
    with pytest.raises(PatchError, match=message):
        parse_patch(patch)


def test_whitespace_tolerance_tiers() -> None:
    text = "def f():\n    value = 1   \n    return value\n"
    # Trailing whitespace in the file, not in the patch.
    assert (
        _apply(text, "@@\n-    value = 1\n+    value = 2\n") == "def f():\n    value = 2\n    return value\n"
    )
    # Indentation lost by the model: leading and trailing whitespace ignored.
    assert _apply(text, "@@\n-value = 1\n+    value = 3\n").splitlines()[1] == "    value = 3"
    # Typographic quotes and dashes in the patch match ASCII in the file.
    assert _apply('msg = "a - b"\n', "@@\n-msg = \u201ca \u2013 b\u201d\n+msg = 'ok'\n") == "msg = 'ok'\n"


def test_exact_match_wins_over_a_looser_earlier_one() -> None:
    text = "x = 1 \nx = 1\n"
    assert _apply(text, "@@\n-x = 1\n+x = 2\n") == "x = 1 \nx = 2\n"


def test_anchor_finds_the_right_occurrence_and_hunks_go_in_order() -> None:
    text = "def a():\n    return 0\n\ndef b():\n    return 0\n"
    body = "@@ def b():\n-    return 0\n+    return 2\n"
    assert _apply(text, body) == "def a():\n    return 0\n\ndef b():\n    return 2\n"
    with pytest.raises(PatchError, match="looks for the line 'def c\\(\\):'"):
        _apply(text, "@@ def c():\n-    return 0\n+    return 1\n")


def test_unified_diff_header_ranges_are_ignored() -> None:
    assert _apply("a\nb\n", "@@ -1,2 +1,2 @@\n a\n-b\n+c\n") == "a\nc\n"


def test_pure_addition_after_an_anchor_or_at_the_end() -> None:
    text = "class A:\n    pass\nend\n"
    assert _apply(text, "@@ class A:\n+    x = 1\n") == "class A:\n    x = 1\n    pass\nend\n"
    assert _apply(text, "@@\n+tail\n") == "class A:\n    pass\nend\ntail\n"


def test_end_of_file_marker_prefers_the_last_lines() -> None:
    text = "x\ny\nx\ny\n"
    assert _apply(text, "@@\n x\n-y\n+z\n*** End of File\n") == "x\ny\nx\nz\n"


def test_crlf_files_keep_crlf() -> None:
    assert _apply("a\r\nb\r\n", "@@\n a\n-b\n+c\n") == "a\r\nc\r\n"


def test_missing_context_names_the_lines_and_the_patch_line() -> None:
    with pytest.raises(PatchError, match=r"f.py: the lines the hunk at patch line 3 expects"):
        _apply("a\n", "@@\n-zzz\n+y\n")
