"""The built-in tools' recorded argument schemas: current, used only while their sources are unchanged, and
what a session offers without making any schema."""

from __future__ import annotations

import json
import subprocess
import sys

from seepient.tools.builtin import ReadFileInput, ShellInput
from seepient.tools.recorded_schemas import (
    RECORD_FILE,
    builtin_inputs,
    current_records,
    made_parameters,
    recorded_parameters,
)


def test_the_record_file_is_current() -> None:
    recorded = json.loads(RECORD_FILE.read_text(encoding="utf-8"))
    assert recorded == current_records(), "rewrite it: python -m seepient.tools.recorded_schemas"


def test_every_builtin_argument_model_is_recorded_as_it_is_made() -> None:
    models = builtin_inputs()
    assert ShellInput in models and ReadFileInput in models and len(models) >= 20
    for model in models:
        assert recorded_parameters(model) == made_parameters(model), model.__qualname__


def test_an_entry_from_other_sources_is_not_used() -> None:
    key = f"{ShellInput.__module__}:{ShellInput.__qualname__}"
    real = json.loads(RECORD_FILE.read_text(encoding="utf-8"))[key]
    planted = {"sources": "0" * 64, "parameters": {"type": "object", "properties": {"anything": {}}}}
    assert recorded_parameters(ShellInput, {key: planted}) is None
    assert recorded_parameters(ShellInput, {key: real}) == real["parameters"]
    assert recorded_parameters(ShellInput, {}) is None


def test_a_model_outside_the_builtin_tools_is_never_read_from_the_record() -> None:
    from seepient.tools.base import ToolInput

    class Elsewhere(ToolInput):
        path: str

    key = f"{Elsewhere.__module__}:{Elsewhere.__qualname__}"
    entry = {"sources": "", "parameters": {"type": "object"}}
    assert recorded_parameters(Elsewhere, {key: entry}) is None


def test_a_session_offers_the_builtin_tools_without_making_a_schema() -> None:
    # In a fresh interpreter: the registry's specs come from the record, so no argument model is built.
    code = (
        "from seepient.tools.recorded_schemas import builtin_inputs\n"
        "from seepient.tools.builtin import BUILTIN_TOOL_TYPES\n"
        "specs = [tool().spec() for tool in BUILTIN_TOOL_TYPES]\n"
        "assert all(spec.parameters['type'] == 'object' for spec in specs)\n"
        "print(sorted(m.__qualname__ for m in builtin_inputs() if m.__pydantic_complete__))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
