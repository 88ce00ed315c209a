"""A small MCP server on the official SDK for the tests: over stdio by default, over streamable HTTP with
``--http PORT``. It reports what it sees (its environment, the arguments it got) and returns content of
every kind, so tests can check what Seepient sends and shows."""

from __future__ import annotations

import argparse
import base64
import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ImageContent, TextContent, ToolAnnotations

server = MCPServer("seepient-test-helper")
CALLS_FILE = os.environ.get("HELPER_CALLS_FILE")


def _note(name: str) -> None:
    if CALLS_FILE:
        with open(CALLS_FILE, "a", encoding="utf-8") as handle:
            handle.write(name + "\n")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def environment() -> str:
    """The names of the environment variables this server process got, one per line."""
    _note("environment")
    return "\n".join(sorted(os.environ))


@server.tool()
def echo(text: str, times: int = 1) -> str:
    """Repeat the text."""
    _note("echo")
    return text * times


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def picture() -> list[TextContent | ImageContent]:
    """A caption and a small PNG."""
    _note("picture")
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 300).decode()
    return [
        TextContent(type="text", text="a caption"),
        ImageContent(type="image", data=png, mimeType="image/png"),
    ]


@server.tool()
async def nap(seconds: float) -> str:
    """Sleep, then say so."""
    _note("nap")
    await anyio.sleep(seconds)
    return f"slept {seconds} s"


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    _note("crash")
    print("helper: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(7)


@server.tool(name="a_tool_whose_name_is_far_too_long_to_fit_in_sixty_four_characters")
def long_named() -> str:
    """Never offered: its exposed name would not fit."""
    return "unreachable"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    options = parser.parse_args()
    if options.http is None:
        server.run()
    else:
        # The tests reach it under a made-up host name too (mcp.example.test, pinned to 127.0.0.1).
        security = TransportSecuritySettings(
            allowed_hosts=[f"127.0.0.1:{options.http}", f"mcp.example.test:{options.http}"]
        )
        server.run("streamable-http", host="127.0.0.1", port=options.http, transport_security=security)
