"""Keeps one control-plane replica in step with the others on a shared PostgreSQL store.

It beats the replica's heartbeat, closes the turns of replicas that died (``recover_after_crash``), and
passes on what the others commit: new events to this replica's subscribers, approval answers and interrupt
requests to the turns it runs. Notifications (``LISTEN``) make that prompt; a poll every ``poll_s`` makes a
lost notification, or a listening connection that dropped, only a delay.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import Callable, Iterable

import psycopg

from seepient.store import Store
from seepient.store.notify import Change, listen
from seepient.surfaces.server.event_feed import close_cut_turn
from seepient.surfaces.server.live import LiveSession

_log = logging.getLogger("seepient.server.replicas")


def new_replica_id() -> str:
    """A name for this replica that says where it runs: host, process and a random part."""
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{secrets.token_hex(3)}"


class ReplicaLink:
    def __init__(
        self,
        store: Store,
        loaded: Callable[[], Iterable[LiveSession]],
        find: Callable[[str], LiveSession | None],
        *,
        poll_s: float = 1.0,
        heartbeat_s: float = 3.0,
    ) -> None:
        assert store.replica_id is not None
        self._store = store
        self._replica = store.replica_id
        self._loaded = loaded
        self._find = find
        self._poll_s = poll_s
        self._heartbeat_s = heartbeat_s
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Run until cancelled; on cancellation the replica leaves (its row goes, freeing its sessions)."""
        try:
            await asyncio.gather(self._listen_forever(), self._poll_forever())
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.shield(self._store.remove_replica(self._replica))

    # -- notifications --------------------------------------------------------------------------------

    async def _listen_forever(self) -> None:
        while True:
            try:
                async for change in listen(self._store):
                    self._on_change(change)
            except (psycopg.Error, OSError) as exc:
                _log.warning(
                    "listening for other replicas' changes failed (%s); polling until it is back", exc
                )
            await asyncio.sleep(self._poll_s)

    def _on_change(self, change: Change) -> None:
        if change.replica == self._replica:
            return
        live = self._find(change.session_id)
        if live is None:
            return
        if change.kind == "events":
            if not live.running:
                live.request_catch_up()
        elif change.kind == "answer":
            self._spawn(live.take_stored_answers([change.value]))
        elif change.kind == "interrupt":
            self._spawn(self._interrupt_if_asked([live]))

    def _spawn(self, work: object) -> None:
        task = asyncio.get_running_loop().create_task(self._logged(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _logged(work: object) -> None:
        try:
            await work  # type: ignore[misc]
        except Exception:
            _log.exception("acting on another replica's change failed; the next poll retries")

    # -- polling --------------------------------------------------------------------------------------

    async def _poll_forever(self) -> None:
        loop = asyncio.get_running_loop()
        next_beat = 0.0
        while True:
            try:
                if loop.time() >= next_beat:
                    await self._store.heartbeat(self._replica)
                    await self._store.recover_after_crash(close=close_cut_turn)
                    next_beat = loop.time() + self._heartbeat_s
                await self.poll()
            except Exception:
                _log.exception("keeping in step with the other replicas failed; retrying")
            await asyncio.sleep(self._poll_s)

    async def poll(self) -> None:
        """One round of what notifications would have said: new events, answers and interrupts."""
        sessions = list(self._loaded())
        following = [live for live in sessions if not live.running and live.has_subscribers]
        if following:
            seqs = await self._store.last_seqs(live.id for live in following)
            for live in following:
                if seqs.get(live.id, 0) > live.delivered_seq:
                    live.request_catch_up()
        running = [live for live in sessions if live.running]
        if running:
            await self._interrupt_if_asked(running)
            for live in running:
                await live.take_stored_answers()

    async def _interrupt_if_asked(self, sessions: list[LiveSession]) -> None:
        by_id = {live.id: live for live in sessions if live.running}
        for session_id in await self._store.interrupts_requested(by_id):
            await by_id[session_id].interrupt()
