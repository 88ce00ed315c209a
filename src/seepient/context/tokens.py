"""Offline token estimates: a characters-per-token heuristic, corrected by the usage the provider reports.

No tokenizer is downloaded: English prose and code run at roughly 3.5 to 4.5 ASCII characters per token in
current BPE vocabularies, while each character outside ASCII (CJK, emoji) costs about one token or more.
The provider's ``input_tokens`` for a request we estimated tells how far off we are for this model and this
conversation, and the correction is kept as a smoothed factor.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

from seepient.protocol import Message, ToolSpec, Usage

ASCII_CHARS_PER_TOKEN = 3.8
EXTRA_BYTES_PER_TOKEN = 2.5
"""Each UTF-8 byte beyond the first of a character adds this share of a token (a 3-byte CJK character
costs 1/3.8 + 2/2.5 ≈ 1.06 tokens)."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Role markers and separators every chat format wraps around a message."""

IMAGE_TOKENS = 1_600
"""An image's cost without decoding it: about what a 1 megapixel image costs on current providers."""

_FACTOR_BOUNDS = (0.25, 4.0)
_SMOOTHING = 0.5
_MIN_CALIBRATION_TOKENS = 200
"""Requests smaller than this say more about fixed overheads than about the text's density."""

_T = TypeVar("_T")


def raw_token_estimate(text: str) -> int:
    """The uncalibrated estimate for ``text``."""
    if not text:
        return 0
    chars = len(text)
    if text.isascii():
        return math.ceil(chars / ASCII_CHARS_PER_TOKEN)
    extra_bytes = len(text.encode("utf-8", "surrogatepass")) - chars
    return math.ceil(chars / ASCII_CHARS_PER_TOKEN + extra_bytes / EXTRA_BYTES_PER_TOKEN)


def _message_raw(message: Message) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS + raw_token_estimate(message.content)
    for call in message.tool_calls:
        arguments = call.raw_arguments
        if arguments is None:
            arguments = json.dumps(call.arguments, ensure_ascii=False, default=str)
        tokens += MESSAGE_OVERHEAD_TOKENS + raw_token_estimate(call.name) + raw_token_estimate(arguments)
    tokens += IMAGE_TOKENS * len(getattr(message, "images", ()))
    provider_content = getattr(message, "provider_content", None)
    if provider_content is not None:
        # Reasoning blocks a provider wants back are sent in full; their text is already counted above
        # only when the adapter also copied it into ``content``, so count the blocks themselves.
        tokens += raw_token_estimate(json.dumps(provider_content.items, ensure_ascii=False, default=str))
    return tokens


def _spec_raw(spec: ToolSpec) -> int:
    text = spec.name + spec.description + json.dumps(spec.parameters, ensure_ascii=False)
    return MESSAGE_OVERHEAD_TOKENS + raw_token_estimate(text)


class _CountsByIdentity(Generic[_T]):
    """Raw counts of immutable objects, each counted once: messages and tool specs are frozen, and a history
    is re-estimated before every call. An entry keeps its object alive, so its id cannot be reused by another
    object meanwhile; past ``size`` entries the cache starts over."""

    def __init__(self, count: Callable[[_T], int], size: int) -> None:
        self._count = count
        self._size = size
        self._entries: dict[int, tuple[_T, int]] = {}

    def __call__(self, item: _T) -> int:
        key = id(item)
        hit = self._entries.get(key)
        if hit is not None and hit[0] is item:
            return hit[1]
        if len(self._entries) > self._size:
            self._entries.clear()
        tokens = self._count(item)
        self._entries[key] = (item, tokens)
        return tokens


#: Raw counts do not depend on an estimator's factor, and the built-in tools' specs are shared by every session
#: (``Tool.spec``): one cache for all estimators counts each once per process, not once per session.
_SPEC_COUNTS: _CountsByIdentity[ToolSpec] = _CountsByIdentity(_spec_raw, 2_000)


class TokenEstimator:
    """Estimates tokens for texts, messages and whole requests, and learns from reported usage.

    ``factor`` multiplies every raw estimate; ``calibrate`` moves it toward reported/estimated.
    """

    def __init__(self, factor: float = 1.0) -> None:
        self.factor = factor
        self.observations = 0
        self._message_raw = _CountsByIdentity(_message_raw, 20_000)
        self._spec_raw = _SPEC_COUNTS

    def text(self, text: str) -> int:
        return math.ceil(raw_token_estimate(text) * self.factor)

    def message(self, message: Message) -> int:
        return math.ceil(self._message_raw(message) * self.factor)

    def messages(self, messages: Iterable[Message]) -> int:
        return math.ceil(sum(self._message_raw(m) for m in messages) * self.factor)

    def tools(self, specs: Sequence[ToolSpec]) -> int:
        return math.ceil(sum(self._spec_raw(s) for s in specs) * self.factor)

    def request(self, system: str, messages: Sequence[Message], specs: Sequence[ToolSpec] = ()) -> int:
        """Everything one model call sends: the system prompt, the history and the tool schemas."""
        return math.ceil(self.raw_request(system, messages, specs) * self.factor)

    def raw_request(self, system: str, messages: Sequence[Message], specs: Sequence[ToolSpec] = ()) -> int:
        raw = MESSAGE_OVERHEAD_TOKENS + raw_token_estimate(system)
        raw += sum(self._message_raw(m) for m in messages)
        raw += sum(self._spec_raw(s) for s in specs)
        return raw

    def calibrate(self, raw_estimate: int, usage: Usage) -> None:
        """Learn from one call: ``raw_estimate`` is ``raw_request`` of what was sent, ``usage`` what the
        provider counted. Calls without reported input tokens (the replay model, some local servers) teach
        nothing."""
        reported = usage.input_tokens
        if reported is None or reported <= 0 or raw_estimate < _MIN_CALIBRATION_TOKENS:
            return
        low, high = _FACTOR_BOUNDS
        observed = min(high, max(low, reported / raw_estimate))
        if self.observations == 0:
            self.factor = observed
        else:
            self.factor = (1 - _SMOOTHING) * self.factor + _SMOOTHING * observed
        self.observations += 1
