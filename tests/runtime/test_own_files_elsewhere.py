"""Seepient's own files kept outside its home (an audit signing key, a witness named in the user's settings) are
as unreadable to the model and as invisible in the jail as the home itself."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from seepient.protocol import ToolResult
from seepient.runtime import Session


@pytest.fixture
def elsewhere() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="seepient-own-", dir="/var/tmp"))  # outside /tmp and any home
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _results(events: list[object]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


async def test_a_key_and_witness_outside_the_home_are_refused_and_hidden(
    make_session, tmp_path, elsewhere
) -> None:  # type: ignore[no-untyped-def]
    key, witness = elsewhere / "keys" / "audit.key", elsewhere / "audit.witness"
    home = tmp_path / "seepient-home"
    home.mkdir()
    (home / "settings.json").write_text(
        json.dumps({"audit": {"signingKeyPath": str(key), "witnessPath": str(witness)}})
    )
    session, events = make_session(
        [
            {"tool_calls": [{"name": "shell", "arguments": {"command": "echo first"}}]},
            {
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": str(key)}},
                    {"name": "write_file", "arguments": {"path": str(witness), "content": "forged"}},
                    {"name": "shell", "arguments": {"command": f"cat {key} {witness}"}},
                    {
                        "name": "shell",
                        # The path reversed: only the jail, not the shell analysis, can stop this read.
                        "arguments": {
                            "command": "python3 -c 'import sys; print(open(sys.argv[1][::-1]).read())' "
                            + str(key)[::-1]
                        },
                    },
                ]
            },
            {"text": "done"},
        ],
        auto_approve=True,
    )
    try:
        await session.run("go")
    finally:
        await session.aclose()
    assert key.exists() and witness.exists()  # the first command's records made them
    secret = key.read_bytes()
    results = _results(events)
    assert [r.status for r in results[1:4]] == ["denied", "denied", "denied"], results
    jailed = results[4]
    assert secret.decode("latin-1")[:20] not in jailed.output
    assert jailed.status == "ok" or "exit" in jailed.output, jailed.output
    assert "No such file" in jailed.output or "Permission denied" in jailed.output, jailed.output
    assert witness.read_text() != "forged"
    assert isinstance(session, Session)
