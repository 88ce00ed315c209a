"""truncate_middle: results fit their limit, keep both ends whole where possible and say what was cut."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seepient.tools.format import truncate_middle

_NOTE = re.compile(r"\[… ([\d,]+) characters(?: \(([\d,]+) lines?\))? cut from the middle …\]")


def _split(result: str, text: str) -> tuple[str, int, int, str]:
    """Head, the cut character and line counts the note states, and tail, checked against ``text``."""
    match = _NOTE.search(result)
    assert match is not None, result
    chars = int(match.group(1).replace(",", ""))
    lines = int((match.group(2) or "0").replace(",", ""))
    tail = result[match.end() :]
    if tail:
        assert tail.startswith("\n")
        tail = tail[1:]
    head = text[: len(text) - chars - len(tail)]
    # The note starts on a line of its own: after the head's own line break, or after one added for it.
    prefix = result[: match.start()]
    assert prefix == (head if head.endswith("\n") or not head else head + "\n")
    assert text.endswith(tail)
    return head, chars, lines, tail


def test_text_that_fits_is_returned_unchanged() -> None:
    assert truncate_middle("", 0) == ""
    assert truncate_middle("abc", 3) == "abc"
    assert truncate_middle("a\nb\n", 100) == "a\nb\n"


def test_long_output_keeps_whole_first_and_last_lines_and_counts_the_cut() -> None:
    text = "".join(f"line {i:04d}\n" for i in range(1000))
    result = truncate_middle(text, 400)
    assert len(result) <= 400
    assert result.startswith("line 0000\nline 0001\n")
    assert result.endswith("line 0998\nline 0999\n")
    head, chars, lines, tail = _split(result, text)
    kept_head = [line for line in head.split("\n") if line]
    kept_tail = [line for line in tail.split("\n") if line]
    assert all(re.fullmatch(r"line \d{4}", line) for line in kept_head + kept_tail)
    assert lines == 1000 - len(kept_head) - len(kept_tail)
    assert chars == lines * len("line 0000\n")


def test_a_single_long_line_is_cut_mid_line_and_reports_characters_only() -> None:
    text = "x" * 10_000
    result = truncate_middle(text, 200)
    assert len(result) <= 200
    head, chars, lines, tail = _split(result, text)
    assert lines == 0 and "lines" not in result
    assert head and tail and chars > 9000


def test_a_limit_too_small_for_the_note_falls_back_to_a_plain_cut() -> None:
    assert truncate_middle("abcdefghij" * 10, 5) == "abcd…"
    assert truncate_middle("abc", 1) == "…"
    assert truncate_middle("abc", 0) == ""


def test_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        truncate_middle("abc", -1)


def test_non_ascii_text_is_cut_by_characters_not_bytes() -> None:
    text = "é" * 5000
    result = truncate_middle(text, 300)
    assert len(result) <= 300
    head, chars, _lines, tail = _split(result, text)
    assert head and tail and set(head + tail) == {"é"}
    assert chars > 4000


@settings(max_examples=250, deadline=None)
@given(data=st.data())
def test_never_exceeds_the_limit_and_the_note_accounts_for_every_character(data: st.DataObject) -> None:
    line = st.text(alphabet=st.sampled_from("ab é\t"), max_size=60)
    text = "\n".join(data.draw(st.lists(line, min_size=40, max_size=200)))
    limit = int(len(text) * data.draw(st.floats(min_value=0, max_value=1.1)))
    result = truncate_middle(text, limit)
    assert len(result) <= limit
    if len(text) <= limit:
        assert result == text
    elif _NOTE.search(result):
        head, chars, lines, tail = _split(result, text)
        assert lines == text[len(head) : len(text) - len(tail)].count("\n")
    else:
        assert result == text[: max(limit - 1, 0)] + ("…" if limit else "")
