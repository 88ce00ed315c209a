"""jq's words: the filter, variables given two words (``--arg NAME VALUE``), and the files it reads through
its operands and options (``-f``, ``--slurpfile``, ``--rawfile``, ``-L``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seepient.shell import analyse_command


def _opened(line: str) -> list[tuple[str, str]]:
    analysis = analyse_command(line, cwd=Path("/w"), workspace=Path("/w"), home=Path("/h"))
    assert analysis.parsed, analysis.problems
    (facts,) = analysis.facts
    assert not any(op.write for op in facts.operands)
    return [(op.word.text, op.role) for op in facts.operands]


@pytest.mark.parametrize(
    ("line", "opened"),
    [
        ("jq -r --indent 4 .name package.json", [("package.json", "jq input")]),
        ("jq --arg x data.json .a in.json", [("in.json", "jq input")]),
        ("jq -n --argjson v '{\"a\":1}' '$v'", []),
        (
            "jq --slurpfile s data.json . in.json",
            [("data.json", "jq --slurpfile file"), ("in.json", "jq input")],
        ),
        ("jq -n --rawfile r notes.txt '$r'", [("notes.txt", "jq --rawfile file")]),
        ("jq -f prog.jq in.json", [("prog.jq", "jq filter file"), ("in.json", "jq input")]),
        ("jq -nrf prog.jq", [("prog.jq", "jq filter file")]),
        ("jq -L lib . in.json", [("lib", "jq module folder"), ("in.json", "jq input")]),
        ("jq -Llib . in.json", [("lib", "jq module folder"), ("in.json", "jq input")]),
        ("jq -n '$ARGS' --args a b", []),
        ("jq . in.json --args a b", [("in.json", "jq input")]),
        ("jq -- -odd in.json", [("in.json", "jq input")]),
    ],
)
def test_jq_opens_exactly_its_files(line: str, opened: list[tuple[str, str]]) -> None:
    assert _opened(line) == opened


def test_a_filter_computed_at_run_time_is_treated_as_a_file_it_may_name() -> None:
    assert _opened('jq "$F" in.json') == [('"$F"', "jq filter file"), ("in.json", "jq input")]


def test_jq_stays_in_the_known_safe_set_whatever_its_variables() -> None:
    analysis = analyse_command("jq --arg a b --argjson c 1 . in.json", cwd=Path("/w"), workspace=Path("/w"))
    assert analysis.known_safe
