"""Which heavy libraries load, in a fresh interpreter: importing the runtime, and opening a session and running
a turn with no MCP server and no language server asked, load none of the MCP SDK, pygls/lsprotocol, nbformat,
jsonschema, BeautifulSoup, the Docker/HTTP-server clients, OpenTelemetry, the Prometheus client (telemetry
is off unless configured) or cryptography's X.509 half (the audit log signs without it). They cost seconds at
every start (the TUI, ``seepient run``, each server session) and only the features that use them should pay. A
real ``seepient run`` against a local model server loads no trio either, and no SQLAlchemy: a stored session is
recorded on the standard library's sqlite3 once the home database exists, and ``--ephemeral`` records none."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from tests.conftest import REPO
from tests.support.cli_probe import probe_cli
from tests.support.sse_server import Reply, SSEReplayServer

HEAVY = frozenset(
    {"mcp", "mcp_types", "lsprotocol", "pygls", "nbformat", "aiohttp", "aiodocker", "jsonschema", "bs4"}
    | {"sentence_transformers", "torch", "numpy", "transformers"}
    | {"opentelemetry", "prometheus_client", "google"}
    # The audit log signs with Ed25519 keys alone; X.509 is for worker mode's certificates.
    | {"cryptography.x509"}
)

_REPORT = """
import json, sys
print(json.dumps(sorted(({m.split(".")[0] for m in sys.modules} | set(sys.modules)) & set(json.loads(sys.argv[1])))))
"""


def _loaded(code: str, *args: str, watch: frozenset[str] = HEAVY) -> list[str]:
    """The ``watch`` top-level packages and modules a fresh interpreter has loaded after running ``code``."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code) + _REPORT, json.dumps(sorted(watch)), *args],
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


# What a real ``seepient run`` in a fresh interpreter loaded, reported as it leaves.
_LOADED = """
import atexit, json, sys

watch = set(json.loads({watch!r}))

def _report():
    loaded = {{m for m in sys.modules if m in watch}} | ({{m.split(".")[0] for m in sys.modules}} & watch)
    print(json.dumps(sorted(loaded)))

atexit.register(_report)
"""


def _cli_run_loaded(tmp_path: Path, server: SSEReplayServer, *flags: str, watch: frozenset[str]) -> list[str]:
    """The ``watch`` packages and modules loaded by a one-turn ``seepient run`` against the local model server."""
    (tmp_path / "ws").mkdir(exist_ok=True)
    server.queue(Reply.synthesized("done"))
    argv = ["run", "-y", "--model", "openai:test", "--base-url", server.base_url, *flags]
    argv += ["--workspace", str(tmp_path / "ws"), "say done"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OPENAI_API_KEY": "test-key", "NO_COLOR": "1"}
    output, loaded = probe_cli(_LOADED.format(watch=json.dumps(sorted(watch))), argv, env=env, cwd=REPO)
    assert "done" in output
    return loaded


# The other commands' modules: ``run`` is defined beside the application, and registers no other command.
_OTHER_COMMANDS = frozenset(
    f"seepient.surfaces.cli.{name}"
    for name in (
        "serve_cmd",
        "sessions_cmd",
        "worker_cmd",
        "scheduler_cmd",
        "acp_cmd",
        "doctor_cmd",
        "tokens_cmd",
    )
)
# The wire formats and the replay model of the providers this run does not talk to.
_UNUSED_MODELS = frozenset(
    f"seepient.models.{name}" for name in ("anthropic", "gemini", "openai_responses", "scripted")
)
# Besides those: trio (httpcore2 probes for it; Seepient runs on asyncio), the SSRF-safe fetcher (a run with no
# web_fetch or web_search call never fetches), pathspec (path rules in settings and a glob's or grep's ignore
# files need it, a plain run neither) and the audit log's verification (a session appends, ``audit verify``
# checks).
_NOT_ON_RUN = (
    HEAVY
    | {"trio", "seepient.net.fetch", "pathspec", "seepient.audit.verify"}
    | _OTHER_COMMANDS
    | _UNUSED_MODELS
)


def test_a_stored_run_against_a_model_server_loads_no_heavy_library_and_no_trio(tmp_path: Path) -> None:
    store = frozenset({"sqlalchemy", "alembic", "aiosqlite"})
    with SSEReplayServer() as server:
        # The first run creates the home database through the store (SQLAlchemy and alembic)...
        assert _cli_run_loaded(tmp_path, server, watch=_NOT_ON_RUN | store) == sorted(store)
        # ...every later one records its session on the standard library's sqlite3.
        assert _cli_run_loaded(tmp_path, server, watch=_NOT_ON_RUN | store) == []


def test_an_ephemeral_run_loads_no_session_store(tmp_path: Path) -> None:
    with SSEReplayServer() as server:
        watch = _NOT_ON_RUN | {"sqlalchemy", "alembic", "aiosqlite"}
        assert _cli_run_loaded(tmp_path, server, "--ephemeral", watch=watch) == []


def test_trio_stays_importable_beside_the_http_stack() -> None:
    # Only httpcore2's own probe is refused; anything else that imports trio gets it.
    code = (
        "from seepient._asyncio_only import keep_trio_out_of_httpcore; keep_trio_out_of_httpcore(); "
        "import httpcore2, sys; assert 'trio' not in sys.modules; import trio; trio.run"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr


def test_a_program_importing_seepient_keeps_its_own_choice_of_async_library() -> None:
    # The SDK's users may run httpx on trio: importing Seepient installs nothing in their import system.
    # (trio is pinned in requirements.lock, so it is there wherever this suite runs.)
    code = "import sys, seepient, seepient.surfaces.sdk; import httpcore2; assert 'trio' in sys.modules"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr


# What the full-screen UI imports before its first frame (the command line's application and the app's module)
# must not bring the runtime with it: the session opens behind the prompt.
_BEFORE_THE_FIRST_FRAME = frozenset(
    {"pydantic", "seepient.runtime.session", "seepient.policy", "seepient.shell", "seepient.tools", "httpx2"}
    | {"seepient.execution", "seepient.audit", "seepient.config.settings", "seepient.protocol.actions"}
    # textual's Markdown widget and the parser it brings (the model's answers need them, the prompt does not).
    | {"markdown_it", "textual.widgets._markdown"}
)


def test_the_tui_draws_its_first_frame_without_the_runtime() -> None:
    code = "import seepient.surfaces.cli.app, seepient.surfaces.tui.app"
    assert _loaded(code, watch=_BEFORE_THE_FIRST_FRAME) == []
