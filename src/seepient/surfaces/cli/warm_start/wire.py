"""The warm start's frames: a length and a JSON object, the caller's first one carrying its descriptors
(SCM_RIGHTS). A frame over the limit, or descriptors the kernel had to cut, end the exchange."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct

from seepient.protocol.errors import InvalidInputError

TYPE_CHECKING = False  # not ``typing``'s, which the client does not otherwise load
if TYPE_CHECKING:
    from typing import Any

_LENGTH = struct.Struct(">I")
# argv and the environment together are bounded by the kernel's ARG_MAX (2 MiB here); twice that is no real
# caller's request and keeps a hostile one from holding memory.
MAX_FRAME = 4 << 20
MAX_DESCRIPTORS = 4
FORWARDED_SIGNALS = frozenset(
    {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGWINCH, signal.SIGUSR1}
    | {signal.SIGUSR2, signal.SIGCONT, signal.SIGTSTP}
)
"""What a person or a supervisor sends a command: the client passes each on, the keeper lets only these through."""


class WireError(InvalidInputError):
    """The other side sent something that is not a frame, or went away in the middle of one."""


def send_frame(sock: socket.socket, message: dict[str, Any], descriptors: list[int] | None = None) -> None:
    body = json.dumps(message).encode("ascii")
    frame = _LENGTH.pack(len(body)) + body
    if descriptors:
        sent = socket.send_fds(sock, [frame], descriptors)
        frame = frame[sent:]
    if frame:
        sock.sendall(frame)


def receive_frame(sock: socket.socket, *, with_descriptors: bool = False) -> tuple[dict[str, Any], list[int]]:
    """The next frame, and the descriptors that came with it (closed here if the frame is refused). Raises
    ``WireError``; a clean end before a frame starts is ``EOFError``."""
    descriptors: list[int] = []
    if with_descriptors:
        head, descriptors, flags, _ = socket.recv_fds(sock, _LENGTH.size, MAX_DESCRIPTORS)
        if flags & socket.MSG_CTRUNC:
            close_descriptors(descriptors)
            raise WireError("descriptors were cut")
    else:
        head = sock.recv(_LENGTH.size)
    try:
        if not head:
            raise EOFError
        head += _exactly(sock, _LENGTH.size - len(head))
        (length,) = _LENGTH.unpack(head)
        if length > MAX_FRAME:
            raise WireError(f"a frame of {length} bytes")
        message = json.loads(_exactly(sock, length))
        if not isinstance(message, dict):
            raise WireError("a frame that is not an object")
    except (WireError, EOFError, ValueError, OSError):
        close_descriptors(descriptors)
        raise
    return message, descriptors


def _exactly(sock: socket.socket, count: int) -> bytes:
    chunks = []
    while count:
        chunk = sock.recv(min(count, 1 << 16))
        if not chunk:
            raise WireError("the other side went away in the middle of a frame")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def close_descriptors(descriptors: list[int]) -> None:
    for fd in descriptors:
        os.close(fd)
