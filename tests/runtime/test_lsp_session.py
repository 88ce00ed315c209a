"""The ``lsp`` tool and post-edit diagnostics through a real Session with the real jedi-language-server."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from seepient.protocol import ToolResult
from tests.execution.lsp_project import write_shop_project
from tests.runtime.conftest import audit_actions


def _results(events: list[Any]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.fixture
def make_session(make_session: Any) -> Any:
    """The language servers here are the project's team settings: the workspace is trusted."""
    return functools.partial(make_session, project_trust=True)


JEDI_SETTINGS = {"lsp": {"servers": {"python": {"command": ["jedi-language-server"], "extensions": [".py"]}}}}


def _project(workspace: Path) -> None:
    (workspace / ".seepient").mkdir(parents=True, exist_ok=True)
    (workspace / ".seepient" / "settings.json").write_text(json.dumps(JEDI_SETTINGS))
    write_shop_project(workspace)


async def test_navigation_and_diagnostics_after_an_edit(make_session: Any, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    _project(workspace)
    (tmp_path / "outside.py").write_text("x = 1\n")
    session, events = make_session(
        [
            _call("lsp", operation="definition", path="main.py", line=3, character=8),
            _call("lsp", operation="references", path="shop/models.py", line=7, character=10),
            _call("lsp", operation="hover", path="main.py", line=4, character=6),
            _call("lsp", operation="document_symbols", path="shop/models.py"),
            _call(
                "edit_file",
                path="shop/models.py",
                old_string="def total(self):",
                new_string="def total(self:",
            ),
            _call("lsp", operation="diagnostics", path="shop/models.py"),
            _call("lsp", operation="definition", path="../outside.py", line=1, character=1),
            _call("lsp", operation="hover", path="main.py"),
            {"text": "done"},
        ],
        auto_approve=True,
    )
    try:
        outcome = await session.run("look around")
    finally:
        await session.aclose()
    assert outcome.reason == "final"
    definition, references, hover, symbols, edit, diagnostics, outside, no_position = _results(events)

    assert definition.status == "ok"
    assert definition.output == "1 definition of Cart at main.py:3:8:\nshop/models.py:1:7  class Cart:"
    assert references.output.splitlines() == [
        "3 references of add at shop/models.py:7:10:",
        "main.py:4:6  cart.add(3)",
        "main.py:5:6  cart.add(4)",
        "shop/models.py:7:9  def add(self, price):",
    ]
    assert "Add one item's price." in hover.output
    assert symbols.output.splitlines()[:3] == [
        "Symbols in shop/models.py (line:column):",
        "class Cart  1:7",
        "  method __init__  4:9",
    ]

    assert edit.status == "ok"
    assert "Language server after this change: 1 problem reported in shop/models.py:" in edit.output
    assert "shop/models.py:11:" in edit.output and "SyntaxError" in edit.output
    assert "    def total(self:" in edit.output  # the offending line
    assert diagnostics.status == "ok" and "1 problem reported in shop/models.py" in diagnostics.output

    assert outside.status == "denied" and "outside.py" in outside.output
    assert no_position.status == "error" and "needs line and character" in no_position.output

    actions = [r["action"] for r in audit_actions(session) if "action" in r]
    lsp_reads = [a for a in actions if a["tool"] == "lsp"]
    assert len(lsp_reads) == 5 and all(a["payload"]["operation"] == "lsp" for a in lsp_reads)
    assert lsp_reads[0]["payload"]["params"] == {"operation": "definition", "line": 3, "character": 8}


async def test_a_configured_server_that_does_not_exist_is_reported_and_the_session_goes_on(
    make_session: Any, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    _project(workspace)
    (workspace / ".seepient" / "settings.json").write_text(
        json.dumps({"lsp": {"servers": {"python": {"command": ["no-such-ls-x9"], "extensions": [".py"]}}}})
    )
    session, events = make_session(
        [
            _call("lsp", operation="document_symbols", path="main.py"),
            _call("edit_file", path="main.py", old_string="cart.add(4)", new_string="cart.add(5)"),
            _call("read_file", path="main.py"),
            {"text": "done"},
        ],
        auto_approve=True,
    )
    try:
        outcome = await session.run("go")
    finally:
        await session.aclose()
    assert outcome.reason == "final"
    lsp, edit, read = _results(events)
    assert lsp.status == "error"
    assert "'no-such-ls-x9' was not found" in lsp.output and "lsp.servers.python.command" in lsp.output
    assert edit.status == "ok" and "Some diagnostics are missing" in edit.output
    assert "cart.add(5)" in (workspace / "main.py").read_text()
    assert read.status == "ok"


@pytest.mark.parametrize("trusted", [False, True])
def test_a_project_cannot_run_its_language_server_outside_the_sandbox(
    make_session: Any, tmp_path: Path, trusted: bool
) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".seepient").mkdir()
    (workspace / ".seepient" / "settings.json").write_text(
        json.dumps({"lsp": {"servers": {"py": {"command": ["sh"], "extensions": [".py"], "sandbox": False}}}})
    )
    session, _ = make_session([{"text": "x"}], project_trust=trusted)
    assert session.settings.lsp.servers == {}
    assert any("never set lsp.servers.py" in str(w) for w in session.context.warnings)


async def test_a_multi_file_patch_gets_diagnostics_for_every_file_it_left(
    make_session: Any, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    _project(workspace)
    (workspace / "old.py").write_text("x = 1\n")
    patch = "\n".join(
        [
            "*** Begin Patch",
            "*** Update File: main.py",
            "@@",
            "-cart.add(4)",
            "+cart.add(4",
            "*** Add File: extra.py",
            "+def broken(:",
            "+    pass",
            "*** Delete File: old.py",
            "*** End Patch",
        ]
    )
    session, events = make_session([_call("apply_patch", patch=patch), {"text": "done"}], auto_approve=True)
    try:
        await session.run("patch")
    finally:
        await session.aclose()
    (result,) = _results(events)
    assert result.status == "ok", result.output
    assert "2 problems reported in main.py, extra.py:" in result.output
    assert "main.py:5:" in result.output and "extra.py:1:" in result.output
    assert "old.py" not in result.output.split("Language server after this change:")[1]
