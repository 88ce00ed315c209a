"""A free loopback port for a server a test starts, distinct from the ones the test already chose."""

from __future__ import annotations

import socket
from collections.abc import Collection


def free_port(*, besides: Collection[int] = ()) -> int:
    """A port nothing listens on now and not in ``besides``: the kernel may hand the port just released to the
    next probe, so two servers of one test could otherwise be given the same one."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port not in besides:
            return port
