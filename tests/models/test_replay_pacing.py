"""``tokens_per_second`` in a replay turn (additive to DESIGN §8): the turn's text streams at that pace, one
word-sized chunk per token, and a bad pace is refused when the script loads."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from seepient.models.scripted import ReplayModel, ReplayScriptError
from seepient.protocol import Completion, Message, ModelRequest, TextChunk

REQUEST = ModelRequest(model="replay", messages=(Message.user("go"),))


def _script(tmp_path: Path, turns: list[dict[str, object]]) -> Path:
    path = tmp_path / "paced.yaml"
    path.write_text(yaml.safe_dump(turns), encoding="utf-8")
    return path


async def test_a_paced_turn_streams_its_words_on_schedule(tmp_path: Path) -> None:
    text = " ".join(f"w{i}" for i in range(10))
    model = ReplayModel(_script(tmp_path, [{"text": text, "tokens_per_second": 50}, {"text": "fast"}]))
    started = time.monotonic()
    arrivals: list[float] = []
    chunks: list[str] = []
    completion = None
    async for event in model.stream(REQUEST):
        if isinstance(event, TextChunk):
            arrivals.append(time.monotonic() - started)
            chunks.append(event.text)
        elif isinstance(event, Completion):
            completion = event
    assert "".join(chunks) == text and len(chunks) == 10
    assert completion is not None and completion.message.content == text
    # Chunk n goes out no earlier than (n - 1) / 50 s after the first: sleeping never ends early.
    for number, arrived in enumerate(arrivals):
        assert arrived >= number / 50 - 0.005
    assert [e.text async for e in model.stream(REQUEST) if isinstance(e, TextChunk)] == ["fast"]


@pytest.mark.parametrize(
    ("pace", "complaint"),
    [
        (0, "greater than 0"),
        (-3, "greater than 0"),
        ("fast", "tokens_per_second"),
        (True, "tokens_per_second"),
    ],
)
def test_a_bad_pace_is_refused_at_load(tmp_path: Path, pace: object, complaint: str) -> None:
    with pytest.raises(ReplayScriptError, match="turn 1") as refused:
        ReplayModel(_script(tmp_path, [{"text": "x", "tokens_per_second": pace}]))
    assert complaint in str(refused.value)


def test_the_pace_is_listed_among_the_keys_a_turn_may_have(tmp_path: Path) -> None:
    with pytest.raises(ReplayScriptError, match="tokens_per_second"):
        ReplayModel(_script(tmp_path, [{"text": "x", "tokens_per_sec": 5}]))
