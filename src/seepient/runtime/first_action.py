"""What a session's first action would otherwise pay for by itself (the audit key and the cryptography that reads
it, the action models' validators, the jail's view of this machine), done in a thread while the first model
request is in flight; the pipeline waits for it before it takes that action."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence

_log = logging.getLogger(__name__)


class FirstActionWarmup:
    """Runs ``tasks`` in order in one daemon thread. Each task only computes or reads what a later step would
    compute or read anyway (and caches), so a task that fails is skipped: the step that needs it redoes the work
    and reports the failure where it belongs. A daemon, since nothing it does must outlive the session's work:
    a one-step run that never acts leaves without waiting for it."""

    def __init__(self, tasks: Sequence[Callable[[], object]]) -> None:
        self._tasks = tuple(tasks)
        self._thread: threading.Thread | None = None
        self._joined: asyncio.Future[None] | None = None

    def start(self) -> None:
        if self._thread is None and self._tasks:
            self._thread = threading.Thread(target=self._run, name="seepient-first-action", daemon=True)
            self._thread.start()

    async def wait(self) -> None:
        """Return once every task has run (at once when they have, or were never started). Every waiter awaits
        one join, so the calls of a step waiting here go on in the order they came, as without a warm-up (each
        with a join of its own, they resumed in whatever order their threads finished)."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        joined = self._joined
        # A join belongs to the loop that started it (the SDK's blocking calls each run a loop of their own).
        if joined is None or joined.get_loop() is not asyncio.get_running_loop():
            joined = self._joined = asyncio.ensure_future(asyncio.to_thread(thread.join))
        await asyncio.shield(joined)

    def _run(self) -> None:
        for task in self._tasks:
            try:
                task()
            except Exception:  # the step that needs it does the work again and says what failed
                _log.debug("first-action warm-up task %r failed", task, exc_info=True)
