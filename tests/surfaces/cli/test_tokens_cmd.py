"""Token lifetimes as ``tokens create --expires`` reads them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from seepient.surfaces.cli.tokens_cmd import parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90m", timedelta(minutes=90)),
        ("12h", timedelta(hours=12)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
        ("1d12h", timedelta(days=1, hours=12)),
        (" 30S ", timedelta(seconds=30)),
    ],
)
def test_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "7", "d", "7x", "-1d", "1d 2h", "0s", "1.5h", "7d!"])
def test_anything_else_is_refused_with_an_example(text: str) -> None:
    with pytest.raises(ValueError, match="duration|positive"):
        parse_duration(text)
