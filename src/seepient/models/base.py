"""The Model protocol every adapter implements: one streamed completion per request."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from seepient.protocol import ModelRequest, ModelStreamEvent
from seepient.protocol.errors import ProviderError


class ModelError(ProviderError):
    """A model call that failed. ``retryable`` tells the resilience layer whether trying again can help;
    ``status`` is the HTTP status when there was one; ``retry_after_s`` is the wait the provider asked for
    (``Retry-After``), when it named one."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after_s = retry_after_s


class Model(Protocol):
    """``stream`` yields text and tool-call chunks and ends with exactly one ``Completion``,
    or raises ``ModelError``."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class ResumableModel(Protocol):
    """A model whose answers follow from how many steps it has played (a script): a restored session tells it
    how many its stored history shows, so it plays on from there instead of from the start."""

    def resume_after(self, steps: int) -> None: ...
