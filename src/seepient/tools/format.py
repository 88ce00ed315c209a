"""Shaping tool results for the model: ``truncate_middle`` keeps a result within its size limit while
keeping both ends, because the start (what ran) and the end (the error, the summary) matter most."""

from __future__ import annotations

_SNAP_FRACTION = 0.2
"""How much of a side's budget may be given up to cut at a line break instead of mid-line."""


def _note(chars: int, lines: int) -> str:
    if lines:
        plural = "line" if lines == 1 else "lines"
        return f"[… {chars:,} characters ({lines:,} {plural}) cut from the middle …]"
    return f"[… {chars:,} characters cut from the middle …]"


def truncate_middle(text: str, limit: int) -> str:
    """``text`` unchanged when it fits in ``limit`` characters; otherwise its head and tail around a note
    saying how many characters and line breaks were cut. The result never exceeds ``limit``.

    Cuts snap to line breaks when one is near, so kept lines stay whole. A limit too small to hold the
    note falls back to a plain cut ending in ``…``.
    """
    if limit < 0:
        raise ValueError(f"limit must be zero or more, not {limit}")
    if len(text) <= limit:
        return text
    # The note can only shrink as the kept ends grow, so sizing the ends against the longest possible
    # note keeps the whole result inside the limit.
    longest_note = len(_note(len(text), text.count("\n"))) + 2
    budget = limit - longest_note
    if budget < 2:
        return text[: limit - 1] + "…" if limit else ""

    head_budget = (budget + 1) // 2
    tail_budget = budget - head_budget
    head_end = head_budget
    newline = text.rfind("\n", 0, head_budget)
    if newline != -1 and newline + 1 >= head_budget * (1 - _SNAP_FRACTION):
        head_end = newline + 1
    tail_start = len(text) - tail_budget
    newline = text.find("\n", tail_start - 1, len(text))
    if newline != -1 and newline + 1 <= tail_start + tail_budget * _SNAP_FRACTION:
        tail_start = newline + 1

    cut = text[head_end:tail_start]
    head, tail = text[:head_end], text[tail_start:]
    before = "" if head.endswith("\n") or not head else "\n"
    after = "\n" if tail else ""
    return f"{head}{before}{_note(len(cut), cut.count(chr(10)))}{after}{tail}"
