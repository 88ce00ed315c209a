"""Choosing a scheduler: spread by fewest in flight (then in turn), a breaker per host (consecutive failures
open it for a cooldown, then one probe), health checks when stale, one shared view per configuration."""

from __future__ import annotations

from seepient.execution.worker_hosts import WorkerHost, WorkerHosts, shared_hosts

A, B, C = (WorkerHost(f"https://{name}:8443", "default") for name in "abc")


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_dispatches_spread_by_fewest_in_flight_then_in_turn() -> None:
    hosts = WorkerHosts((A, B, C), clock=_Clock())
    firsts = [hosts.candidates()[0] for _ in range(6)]
    assert set(firsts) == {A, B, C} and firsts[:3] != [A, A, A]
    with hosts.using(A), hosts.using(B):
        assert hosts.candidates()[0] == C
        with hosts.using(C), hosts.using(C):
            assert hosts.candidates()[-1] == C


def test_a_host_that_keeps_failing_is_set_aside_then_probed_once() -> None:
    clock = _Clock()
    hosts = WorkerHosts((A, B), failure_threshold=2, cooldown_s=30, clock=clock)
    hosts.unreachable(A, "refused")
    assert hosts.state(A) == "closed" and A in hosts.candidates()
    hosts.unreachable(A, "refused")
    assert hosts.state(A) == "open" and hosts.candidates() == [B]
    clock.now += 30
    assert hosts.state(A) == "half_open" and hosts.candidates() == [B, A]
    with hosts.using(A):
        # One probe at a time: while it runs, the half-open host is not offered again.
        assert hosts.candidates() == [B]
    hosts.unreachable(A, "still refused")
    assert hosts.state(A) == "open", "a failed probe opens it again at once"
    clock.now += 30
    hosts.reached(A)
    assert hosts.state(A) == "closed" and hosts.last_error(A) is None


def test_health_is_checked_when_stale_and_after_a_failure() -> None:
    clock = _Clock()
    hosts = WorkerHosts((A,), health_interval_s=10, clock=clock)
    assert hosts.needs_check(A)
    hosts.reached(A)
    assert not hosts.needs_check(A)
    clock.now += 10
    assert hosts.needs_check(A)
    hosts.reached(A)
    hosts.unreachable(A, "reset")
    assert hosts.needs_check(A)


def test_sessions_of_one_process_share_what_is_known_of_each_host() -> None:
    first = shared_hosts((A, B), failure_threshold=3, cooldown_s=5)
    assert shared_hosts((A, B), failure_threshold=3, cooldown_s=5) is first
    assert shared_hosts((B, A), failure_threshold=3, cooldown_s=5) is not first
