"""The per-session event stream: numbers each runtime event and hands it to every subscriber.

Events are kept in order so a surface that reconnects can ask for everything after the last ``seq`` it saw.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from seepient.protocol import RuntimeEvent

EventListener = Callable[[RuntimeEvent], None]


class EventStream:
    def __init__(self, session_id: str, *, keep: int | None = None) -> None:
        """``keep``: how many recent events ``since`` can return (every event when ``None``)."""
        self._session_id = session_id
        self._seq = 0
        self._history: list[RuntimeEvent] | deque[RuntimeEvent] = [] if keep is None else deque(maxlen=keep)
        self._listeners: list[EventListener] = []

    def subscribe(self, listener: EventListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(self, event_type: type[Any], **fields: Any) -> RuntimeEvent:
        self._seq += 1
        event = event_type(session_id=self._session_id, seq=self._seq, **fields)
        self._history.append(event)
        for listener in list(self._listeners):
            listener(event)
        return event

    def since(self, seq: int) -> list[RuntimeEvent]:
        return [e for e in self._history if e.seq > seq]
