"""Fixtures for the net tests: loopback HTTP servers and a policy that lets tests (only tests) reach them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from seepient.net import AddressPolicy
from tests.net.local_http import LocalHttpServer


@pytest.fixture
async def server() -> AsyncIterator[LocalHttpServer]:
    started = await LocalHttpServer().start()
    yield started
    await started.close()


@pytest.fixture
async def internal_server() -> AsyncIterator[LocalHttpServer]:
    """A second server on another loopback address, standing in for an internal service that must never
    be reached."""
    started = await LocalHttpServer(host="127.0.0.2").start()
    yield started
    await started.close()


def loopback_policy(*servers: LocalHttpServer) -> AddressPolicy:
    """Production defaults plus exactly 127.0.0.1 and the servers' ports: what a user would configure to
    reach an internal service."""
    return AddressPolicy.build(allow_ranges=["127.0.0.1/32"], allow_ports=[s.port for s in servers])


def mapped_resolver(names: dict[str, list[str]]) -> Callable[[str, int], object]:
    async def resolve(host: str, port: int) -> list[str]:
        if host not in names:
            raise OSError(f"test resolver has no answer for {host}")
        return names[host]

    return resolve
