"""The ACP stdio transport: malformed lines are answered with JSON-RPC errors and reading goes on; messages go
out one line each; the protocol keeps the real stdout while descriptor 1 points at stderr."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from typing import Any

from seepient.surfaces.acp.wire import CheckedLines


class _Out:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        text = data.decode()
        assert text.endswith("\n") and text.count("\n") == 1
        self.lines.append(json.loads(text))

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


async def _read(*lines: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    reader = asyncio.StreamReader()
    for line in lines:
        reader.feed_data(line)
    reader.feed_eof()
    out = _Out()
    transport = CheckedLines(reader, out)
    received = []
    while (message := await transport.receive()) is not None:
        received.append(message)
    return received, out.lines


async def test_bad_lines_get_errors_with_their_id_when_they_have_one_and_good_ones_pass():
    good = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": 1}}
    received, answered = await _read(
        b"{not json\n",
        b"\n",
        b'"a string"\n',
        b'{"jsonrpc":"1.0","id":1,"method":"x"}\n',
        b'{"jsonrpc":"2.0","id":2,"method":5}\n',
        b'{"jsonrpc":"2.0","id":3,"method":"x","params":"p"}\n',
        b'{"jsonrpc":"2.0","id":{"no":1},"method":"x"}\n',
        b'{"jsonrpc":"2.0","id":4}\n',
        b"\xff\xfe\n",
        json.dumps(good).encode() + b"\n",
        b'{"jsonrpc":"2.0","id":0,"result":null}\n',
    )
    assert received == [good, {"jsonrpc": "2.0", "id": 0, "result": None}]
    assert [(a["id"], a["error"]["code"]) for a in answered] == [
        (None, -32700),
        (None, -32600),
        (1, -32600),
        (2, -32600),
        (3, -32600),
        (None, -32600),
        (4, -32600),
        (None, -32700),
    ]
    assert all(a["jsonrpc"] == "2.0" and a["error"]["data"]["details"] for a in answered)


def test_claiming_stdout_sends_stray_prints_and_children_to_stderr():
    code = textwrap.dedent(
        """
        import os, subprocess, sys
        from seepient.surfaces.acp.wire import claim_stdout
        fd = claim_stdout()
        print("stray print")
        subprocess.run(["echo", "child output"], check=True)
        os.write(fd, b'{"jsonrpc":"2.0","method":"ok"}\\n')
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"jsonrpc":"2.0","method":"ok"}\n'
    assert "stray print" in done.stderr and "child output" in done.stderr
