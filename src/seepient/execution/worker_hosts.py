"""Several worker schedulers (one per Docker host) behind one control plane: which one a dispatch goes to.

Hosts are spread by fewest dispatches in flight (ties in turn), each behind a circuit breaker like the model
router's: consecutive failures to reach a host open it for a cooldown, then one probe may try it again. A host
whose last health check is older than ``health_interval_s`` is checked (``GET /v1/health``) before a dispatch
goes to it. Choosing another host is only ever done for a dispatch that was **never sent**: once its bytes may
have reached a scheduler, the control plane cannot know whether it ran, so the caller reports it interrupted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

HostState = Literal["closed", "open", "half_open"]


@dataclass(frozen=True)
class WorkerHost:
    """One scheduler: its base URL and the tenant whose root there holds the workspace."""

    url: str
    tenant: str


@dataclass
class _Health:
    host: WorkerHost
    failures: int = 0
    opened_at: float | None = None
    probing: bool = False
    checked_at: float | None = None
    in_flight: int = 0
    last_error: str | None = None


@dataclass
class WorkerHosts:
    """The hosts of one control plane and what it knows of each. Safe for one event loop (no awaits inside)."""

    hosts: tuple[WorkerHost, ...]
    failure_threshold: int = 3
    cooldown_s: float = 30.0
    health_interval_s: float = 10.0
    clock: Callable[[], float] = time.monotonic
    _health: dict[str, _Health] = field(init=False)
    _turn: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if not self.hosts:
            raise ValueError("at least one scheduler endpoint is needed")
        self._health = {host.url: _Health(host) for host in self.hosts}

    def state(self, host: WorkerHost) -> HostState:
        health = self._health[host.url]
        if health.opened_at is None:
            return "closed"
        return "half_open" if self.clock() - health.opened_at >= self.cooldown_s else "open"

    def candidates(self) -> list[WorkerHost]:
        """Every host that may be tried now, best first: closed ones by fewest in flight (then in turn), then
        half-open ones (at most one probe each). Open hosts are left out."""
        count, turn = len(self.hosts), self._turn
        self._turn += 1
        ranked = sorted(
            range(count),
            key=lambda index: (
                self.state(self.hosts[index]) != "closed",
                self._health[self.hosts[index].url].in_flight,
                (index - turn) % count,
            ),
        )
        out = []
        for index in ranked:
            host = self.hosts[index]
            state = self.state(host)
            if state == "open" or (state == "half_open" and self._health[host.url].probing):
                continue
            out.append(host)
        return out

    def needs_check(self, host: WorkerHost) -> bool:
        checked = self._health[host.url].checked_at
        return checked is None or self.clock() - checked >= self.health_interval_s

    @contextmanager
    def using(self, host: WorkerHost) -> Iterator[None]:
        """Count a dispatch in flight on ``host`` (a half-open host's one probe) for as long as it lasts."""
        health = self._health[host.url]
        probe = self.state(host) == "half_open"
        health.in_flight += 1
        health.probing = health.probing or probe
        try:
            yield
        finally:
            health.in_flight -= 1
            if probe:
                health.probing = False

    def reached(self, host: WorkerHost) -> None:
        """The host answered (a health check, or a dispatch it took): it is healthy again."""
        health = self._health[host.url]
        health.failures, health.opened_at, health.last_error = 0, None, None
        health.checked_at = self.clock()

    def unreachable(self, host: WorkerHost, error: str) -> None:
        """The host could not be reached or did not answer: one failure more; enough of them open it."""
        health = self._health[host.url]
        health.failures += 1
        health.last_error = error
        health.checked_at = None
        if health.failures >= self.failure_threshold or health.opened_at is not None:
            health.opened_at = self.clock()

    def last_error(self, host: WorkerHost) -> str | None:
        return self._health[host.url].last_error


_SHARED: dict[tuple[tuple[WorkerHost, ...], int, float], WorkerHosts] = {}


def shared_hosts(hosts: tuple[WorkerHost, ...], *, failure_threshold: int, cooldown_s: float) -> WorkerHosts:
    """One ``WorkerHosts`` per configuration in a process, so every session of a server shares what it
    learned about each host (a dead one is skipped by all, not found out again by each)."""
    key = (hosts, failure_threshold, cooldown_s)
    found = _SHARED.get(key)
    if found is None:
        found = _SHARED[key] = WorkerHosts(hosts, failure_threshold=failure_threshold, cooldown_s=cooldown_s)
    return found
