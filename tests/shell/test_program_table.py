"""The program table (``seepient/shell/programs.toml``): every program's and wrapper's examples hold, the data
cannot describe a program twice or one written as code, a broken entry is a clear error, and the table is read
only when asked."""

from __future__ import annotations

import shlex
import subprocess
import sys
from typing import Any

import pytest

from seepient.shell import analyse_command, program_table
from seepient.shell.program_table import (
    ProgramTableError,
    coded_programs,
    operand_rule,
    table_entries,
    wrapper_entries,
    wrapper_spec,
)
from tests.conftest import REPO


def _examples(entries: tuple[dict[str, Any], ...]) -> list[tuple[str, dict[str, Any]]]:
    return [(" ".join(entry["names"]), example) for entry in entries for example in entry["examples"]]


def _example_id(value: Any) -> str:
    return value["line"] if isinstance(value, dict) else value.split()[0]


@pytest.mark.parametrize(("program", "example"), _examples(table_entries()), ids=_example_id)
def test_each_example_opens_the_files_it_names(program: str, example: dict[str, Any]) -> None:
    analysis = analyse_command(example["line"])
    assert analysis.parsed, analysis.problems
    (facts,) = analysis.facts
    assert shlex.split(example["line"])[0] in program.split()
    reads = [op.word.text for op in facts.operands if not op.write]
    writes = [op.word.text for op in facts.operands if op.write]
    recursive = [op.word.text for op in facts.operands if op.recursive]
    assert reads == example.get("reads", [])
    assert writes == example.get("writes", [])
    assert recursive == example.get("recursive", [])


@pytest.mark.parametrize(("wrapper", "example"), _examples(wrapper_entries()), ids=_example_id)
def test_each_wrapper_example_runs_the_program_it_names(wrapper: str, example: dict[str, Any]) -> None:
    analysis = analyse_command(example["line"])
    assert analysis.parsed, analysis.problems
    assert shlex.split(example["line"])[0] in wrapper.split()
    assert [" ".join(word.text for word in facts.effective) for facts in analysis.facts] == example["runs"]
    operands = [op for facts in analysis.facts for op in facts.operands]
    assert [op.word.text for op in operands if not op.write] == example.get("reads", [])
    assert [op.word.text for op in operands if op.write] == example.get("writes", [])


def test_every_wrapper_has_examples_and_is_looked_up() -> None:
    for entry in wrapper_entries():
        assert entry["examples"], entry["names"]
        assert all(wrapper_spec(name) is not None for name in entry["names"])
    assert wrapper_spec("make") is None


def test_every_entry_has_examples_and_every_name_is_looked_up() -> None:
    for entry in table_entries():
        assert entry["examples"], entry["names"]
        for name in entry["names"]:
            assert operand_rule(name) is not None
    assert operand_rule("definitely-not-a-program") is None
    assert {"git", "sed", "awk", "find", "tar"} <= coded_programs()


def test_roles_name_the_program_they_came_from() -> None:
    (facts,) = analyse_command("egrep -r x lib").facts
    assert [op.role for op in facts.operands] == ["egrep input"]
    (facts,) = analyse_command("sort -o out in").facts
    assert [(op.role, op.write) for op in facts.operands] == [("sort output", True), ("sort input", False)]


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"names": ["x"], "kind": "operandz", "examples": []}, "kind"),
        ({"names": ["x"], "kind": "operands", "recursiv": "-r", "examples": []}, "recursiv"),
        ({"kind": "operands", "examples": []}, "None"),
    ],
)
def test_a_broken_entry_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, entry: dict[str, Any], words: str
) -> None:
    monkeypatch.setattr(program_table, "table_entries", lambda: (entry,))
    program_table._rules.cache_clear()
    try:
        with pytest.raises(ProgramTableError, match=words):
            operand_rule("x")
    finally:
        program_table._rules.cache_clear()


def test_a_program_described_twice_or_also_as_code_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    twice = {"names": ["cat"], "kind": "operands", "examples": []}
    monkeypatch.setattr(program_table, "table_entries", lambda: (twice, twice))
    program_table._rules.cache_clear()
    try:
        with pytest.raises(ProgramTableError, match="twice"):
            operand_rule("cat")
        coded = {"names": ["git"], "kind": "operands", "examples": []}
        monkeypatch.setattr(program_table, "table_entries", lambda: (coded,))
        program_table._rules.cache_clear()
        with pytest.raises(ProgramTableError, match="written as code"):
            operand_rule("git")
    finally:
        program_table._rules.cache_clear()


def test_importing_the_analysis_does_not_read_the_table() -> None:
    code = (
        "import seepient.shell, seepient.policy, seepient.shell.program_table as t\n"
        "print(t._table_file.cache_info().currsize, t._rules.cache_info().currsize, t._wrappers.cache_info().currsize)\n"
        "seepient.shell.analyse_command('sudo cat a')\n"
        "print(t._table_file.cache_info().currsize, t._rules.cache_info().currsize, t._wrappers.cache_info().currsize)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "0", "0", "1", "1", "1"]


def test_a_broken_wrapper_entry_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program_table, "wrapper_entries", lambda: ({"names": ["w"], "positional": 1},))
    program_table._wrappers.cache_clear()
    try:
        with pytest.raises(ProgramTableError, match="positional"):
            wrapper_spec("w")
    finally:
        program_table._wrappers.cache_clear()


# -- the parsed table kept beside the bytecode -------------------------------------------------------------


def test_the_kept_table_is_the_parsed_text_until_the_text_changes(tmp_path):
    import tomllib

    from seepient.shell.program_table import load_table

    source, cached = tmp_path / "programs.toml", tmp_path / "__pycache__" / "programs.toml.test.marshal"
    source.write_text('[[wrapper]]\nnames = ["nice"]\n')
    first = load_table(source, cached)
    assert first == tomllib.loads(source.read_text()) and cached.is_file()
    kept = cached.read_bytes()
    assert load_table(source, cached) == first and cached.read_bytes() == kept  # read back, not rewritten
    # An edit of the text is seen at once, whatever the cache says.
    source.write_text('[[wrapper]]\nnames = ["nohup"]\n')
    assert load_table(source, cached) == {"wrapper": [{"names": ["nohup"]}]}
    # A damaged cache is parsed past and replaced; without a cache path nothing is written.
    cached.write_bytes(b"\x00garbage")
    assert load_table(source, cached) == {"wrapper": [{"names": ["nohup"]}]}
    assert load_table(source, cached) == {"wrapper": [{"names": ["nohup"]}]}
    elsewhere = tmp_path / "other.toml"
    elsewhere.write_text('[[program]]\nnames = ["cat"]\n')
    assert load_table(elsewhere, None) == {"program": [{"names": ["cat"]}]}
    assert sorted(p.name for p in cached.parent.iterdir()) == [cached.name]


def test_the_package_table_loads_the_same_kept_or_parsed(tmp_path):
    import tomllib
    from pathlib import Path

    from seepient.shell import program_table
    from seepient.shell.program_table import load_table

    source = Path(program_table.__file__).with_name("programs.toml")
    parsed = tomllib.loads(source.read_text(encoding="utf-8"))
    cached = tmp_path / "programs.toml.marshal"
    assert load_table(source, cached) == parsed
    assert load_table(source, cached) == parsed
