"""A command's output kept up to a cap: bytes past it are dropped and the cut is remembered. Standard library
only, so the worker entrypoint in a dispatch container reads its command's output through it too."""

from __future__ import annotations


class CappedOutput:
    """At most ``cap`` bytes of one stream; ``truncated`` once more than that arrived."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._data = bytearray()
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        room = self._cap - len(self._data)
        if len(chunk) > room:
            self.truncated = True
            chunk = chunk[: max(room, 0)]
        self._data += chunk

    def text(self) -> str:
        return self._data.decode("utf-8", errors="replace")
