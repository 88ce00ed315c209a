"""``seepient acp`` stays light: its import path loads neither the TUI, the server, the session store nor the
MCP SDK until something asks for them."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

_HEAVY = ["textual", "fastapi", "uvicorn", "starlette", "alembic", "sqlalchemy", "mcp", "aiohttp"]


def test_importing_the_acp_agent_and_command_loads_no_tui_server_or_store():
    code = (
        "import json, sys\n"
        "import seepient.surfaces.acp, seepient.surfaces.acp.wire, seepient.surfaces.cli.acp_cmd\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({_HEAVY!r}))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
