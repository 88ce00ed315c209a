"""Which heavy libraries load, in a fresh interpreter: importing the runtime, and opening a session and running
a turn with no MCP server and no language server asked, load none of the MCP SDK, pygls/lsprotocol, nbformat,
jsonschema, BeautifulSoup or the Docker/HTTP-server clients. They cost seconds at every start (the TUI, ``seepient
run``, each server session) and only the features that use them should pay."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from tests.conftest import REPO

HEAVY = frozenset(
    {"mcp", "mcp_types", "lsprotocol", "pygls", "nbformat", "aiohttp", "aiodocker", "jsonschema", "bs4"}
    | {"sentence_transformers", "torch", "numpy", "transformers"}
)

_REPORT = """
import json, sys
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[1])))))
"""


def _loaded(code: str, *args: str) -> list[str]:
    """The ``HEAVY`` top-level packages a fresh interpreter has loaded after running ``code``."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code) + _REPORT, json.dumps(sorted(HEAVY)), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


_TURN = """
import asyncio
import sys
from pathlib import Path

from seepient.config import SeepientPaths
from seepient.runtime import Session, SessionOptions

root = Path(sys.argv[2])
options = SessionOptions(
    workspace=root / "ws",
    model=f"replay:{root / 'script.yaml'}",
    paths=SeepientPaths(home=root / "home"),
    config_file=root / "settings.json",
    auto_approve=True,
    sandbox="off",
)


async def turn():
    session = Session.open(options)
    try:
        outcome = await session.run("look around and take a note")
        assert outcome.text == "noted", outcome
        assert (root / "ws" / "notes.md").read_text() == "seen\\n"
    finally:
        await session.aclose()


asyncio.run(turn())
"""


def _world(tmp_path: Path, settings: dict[str, object]) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "app.py").write_text("print('hi')\n")
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    turns = [
        {
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "app.py"}},
                {"name": "glob", "arguments": {"pattern": "**/*.py"}},
                {"name": "write_file", "arguments": {"path": "notes.md", "content": "seen\n"}},
            ]
        },
        {"text": "noted"},
    ]
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(turns))
    return tmp_path


def test_importing_the_runtime_loads_no_heavy_library() -> None:
    assert _loaded("import seepient.runtime, seepient.surfaces.cli.entry") == []


def test_a_session_turn_without_mcp_or_language_servers_loads_no_heavy_library(tmp_path: Path) -> None:
    assert _loaded(_TURN, str(_world(tmp_path, {}))) == []


def test_configured_language_servers_load_pygls_only_when_asked(tmp_path: Path) -> None:
    # A Python server is configured, but the turn edits a markdown file: nothing asks it anything.
    lsp = {"lsp": {"servers": {"python": {"command": ["jedi-language-server"], "extensions": [".py"]}}}}
    assert _loaded(_TURN, str(_world(tmp_path, lsp))) == []


def test_the_probe_sees_a_library_load_on_first_use() -> None:
    # The names built on the MCP SDK still import from the package; doing so loads the SDK.
    loaded = _loaded("from seepient.tools.mcp import McpServers, McpTool, McpStartError")
    assert {"mcp", "mcp_types", "jsonschema"} <= set(loaded)
