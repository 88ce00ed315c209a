"""The sessions a server holds: creates them under the tenancy rules, reopens stored ones on demand, and
keeps every lookup scoped to the principal asking."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path

from seepient.config import SeepientPaths
from seepient.store import SessionRecord, Store
from seepient.surfaces.server.config import ServerConfig
from seepient.surfaces.server.event_feed import EventWriter
from seepient.surfaces.server.live import LiveSession, new_session_id, restore_history
from seepient.surfaces.server.replicas import ReplicaLink, new_replica_id
from seepient.surfaces.server.tenancy import TenancyError, check_mode, check_model, check_workspace


class SessionManager:
    def __init__(
        self, store: Store, config: ServerConfig, *, paths: SeepientPaths, config_file: Path | None = None
    ) -> None:
        self.store = store
        self.config = config
        self.paths = paths
        self.config_file = config_file
        self._live: dict[str, LiveSession] = {}
        self._writer = EventWriter(store)
        self._opening: dict[str, asyncio.Lock] = {}
        self._streams_ended = False
        if store.shared and store.replica_id is None:
            store.replica_id = new_replica_id()

    async def follow_replicas(self) -> None:
        """On a shared store, keep in step with the other replicas until cancelled; else nothing to do."""
        if not self.store.shared:
            return
        await ReplicaLink(self.store, lambda: list(self._live.values()), self._live.get).run()

    async def create(self, principal: str, *, workspace: str, model: str, mode: str | None) -> LiveSession:
        """Check tenancy, open the runtime (so a bad model or settings fail now), then store the session."""
        grant = self.config.grant_for(principal)
        if grant is None:
            raise TenancyError("this server grants you no workspace roots; ask its operator to add you")
        real_workspace = check_workspace(workspace, grant)
        chosen_mode = check_mode(mode, grant)
        spec = check_model(model, grant)
        record = SessionRecord(
            id=new_session_id(),
            principal=principal,
            workspace=str(real_workspace),
            model=spec,
            mode=chosen_mode,
            status="idle",
            last_seq=0,
            created_at=datetime.now(UTC),
            updated_at=datetime.now(UTC),
        )
        live = LiveSession(
            record, self.store, self._writer, approval_timeout_s=self.config.approval_timeout_ms / 1000
        )
        live.open_runtime(
            paths=self.paths,
            history=[],
            config_file=self.config_file,
            project_trust=self.config.trusts(real_workspace),
        )
        try:
            live.record = await self.store.create_session(
                session_id=record.id,
                principal=principal,
                workspace=record.workspace,
                model=spec,
                mode=chosen_mode,
            )
        except BaseException:
            await live.aclose()
            raise
        self._live[record.id] = live
        if self._streams_ended:
            live.end_streams()
        return live

    async def find(self, session_id: str, principal: str) -> SessionRecord | None:
        return await self.store.get_session(session_id, principal)

    async def live(self, session_id: str, principal: str) -> LiveSession | None:
        """The running session, reopened from the store when the server restarted since; ``None`` if not
        the principal's. Reopening re-checks tenancy, so a grant withdrawn from the config takes effect."""
        live = self._live.get(session_id)
        if live is not None:
            if live.principal != principal:
                return None
            live.last_active = time.monotonic()
            return live
        record = await self.store.get_session(session_id, principal)
        if record is None:
            return None
        lock = self._opening.setdefault(session_id, asyncio.Lock())
        async with lock:
            live = self._live.get(session_id)
            if live is not None:
                return live
            grant = self.config.grant_for(principal)
            if grant is None:
                raise TenancyError("this server grants you no workspace roots any more")
            check_workspace(record.workspace, grant)
            check_mode(record.mode, grant)
            check_model(record.model, grant)
            live = LiveSession(
                record, self.store, self._writer, approval_timeout_s=self.config.approval_timeout_ms / 1000
            )
            history = restore_history(await self.store.messages(session_id))
            grants = await self.store.grants(session_id)
            live.open_runtime(
                paths=self.paths,
                history=history,
                config_file=self.config_file,
                grants=grants,
                project_trust=self.config.trusts(Path(record.workspace)),
            )
            self._live[session_id] = live
            if self._streams_ended:
                live.end_streams()
            return live

    async def unload_idle(self) -> list[str]:
        """Close the sessions idle for longer than ``idleUnloadMs``; returns their ids. Each is chosen and
        removed in one step of the event loop, so no request can pick it up half-closed."""
        limit = self.config.idle_unload_ms / 1000
        now = time.monotonic()
        unloaded = []
        for session_id, live in list(self._live.items()):
            if live.idle and now - live.last_active >= limit and self._live.get(session_id) is live:
                del self._live[session_id]
                self._opening.pop(session_id, None)
                unloaded.append(session_id)
                await live.aclose()
        return unloaded

    async def unload_idle_forever(self) -> None:
        """The server's janitor: unload idle sessions every half ``idleUnloadMs`` (at most every 30 s)."""
        interval = min(self.config.idle_unload_ms / 2000, 30.0)
        while True:
            await asyncio.sleep(interval)
            await self.unload_idle()

    @property
    def loaded_count(self) -> int:
        return len(self._live)

    @property
    def streaming_count(self) -> int:
        """Loaded sessions with at least one client following their events (SSE or WebSocket)."""
        return sum(1 for live in self._live.values() if live.has_subscribers)

    def loaded(self, session_id: str) -> LiveSession | None:
        return self._live.get(session_id)

    async def delete(self, session_id: str, principal: str) -> bool:
        live = self._live.get(session_id)
        if live is not None and live.principal == principal:
            await live.aclose()
            self._live.pop(session_id, None)
        return await self.store.delete_session(session_id, principal)

    def end_streams(self) -> None:
        """The server is stopping: end every session's event streams (see ``LiveSession.end_streams``)."""
        self._streams_ended = True
        for live in self._live.values():
            live.end_streams()

    async def aclose(self) -> None:
        for live in list(self._live.values()):
            await live.aclose()
        self._live.clear()
        await self._writer.aclose()
