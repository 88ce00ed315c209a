"""The tool registry and the schemas the model is shown for the built-in tools."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from seepient.protocol import ApprovedAction, PreparedActionDraft
from seepient.tools.base import NonEmpty, Positive, Tool, ToolContext, ToolInput, ToolOutput
from seepient.tools.builtin import (
    EditFileInput,
    GlobInput,
    GrepInput,
    ReadFileInput,
    ShellInput,
    WriteFileInput,
)
from seepient.tools.registry import ToolRegistry, builtin_registry

BUILTIN_NAMES = [
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "grep",
    "shell",
    "todo_write",
    "apply_patch",
    "notebook_read",
    "notebook_edit",
    "skill",
    "web_fetch",
    "web_search",
    "memory",
    "knowledge_search",
    "shell_output",
    "shell_kill",
    "lsp",
    "worktree_create",
    "worktree_list",
    "worktree_remove",
    "agent",
]


class _NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _tool_named(tool_name: str) -> Tool[Any]:
    class _Named(Tool[_NoArgs]):
        name: ClassVar[str] = tool_name
        description: ClassVar[str] = "test tool"
        input_model: ClassVar[type[BaseModel]] = _NoArgs

        async def prepare(self, args: _NoArgs, ctx: ToolContext) -> PreparedActionDraft:
            raise NotImplementedError

        async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
            raise NotImplementedError

    return _Named()


def test_builtin_registry_offers_the_design_tools_in_order() -> None:
    registry = builtin_registry()
    assert registry.names() == BUILTIN_NAMES
    assert [spec.name for spec in registry.specs()] == BUILTIN_NAMES
    assert all(registry.get(name) is not None for name in BUILTIN_NAMES)
    assert "shell" in registry and "nope" not in registry and len(registry) == len(BUILTIN_NAMES)


def test_read_only_tools_are_marked_concurrency_safe_and_the_others_are_not() -> None:
    registry = builtin_registry()
    flags = {
        name: (registry.get(name).read_only, registry.get(name).concurrency_safe) for name in BUILTIN_NAMES
    }  # type: ignore[union-attr]
    assert flags == {
        "read_file": (True, True),
        "write_file": (False, False),
        "edit_file": (False, False),
        "glob": (True, True),
        "grep": (True, True),
        "shell": (False, False),
        # Changes nothing on the host (offered in plan mode), but two lists in one step must apply in order.
        "todo_write": (True, False),
        "apply_patch": (False, False),
        "notebook_read": (True, True),
        "notebook_edit": (False, False),
        "skill": (True, True),
        "web_fetch": (True, True),
        "web_search": (True, True),
        # Writes the agent's memory folder: never alongside another call.
        "memory": (False, False),
        "knowledge_search": (True, True),
        "shell_output": (True, True),
        "shell_kill": (False, False),
        "lsp": (True, True),
        "worktree_create": (False, False),
        "worktree_list": (True, True),
        "worktree_remove": (False, False),
        # Not read-only, but several sub-agents of one step may run together (the launcher bounds them).
        "agent": (False, True),
    }


def test_duplicate_names_are_refused_and_the_first_tool_stays() -> None:
    registry = ToolRegistry()
    first = _tool_named("probe")
    registry.register(first)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(_tool_named("probe"))
    assert registry.get("probe") is first


@pytest.mark.parametrize("bad", ["", "has space", "dot.name", "x" * 65, "naïve"])
def test_names_providers_would_refuse_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not allowed"):
        ToolRegistry().register(_tool_named(bad))


def test_a_disabled_tool_is_hidden_but_its_name_stays_taken() -> None:
    registry = builtin_registry()
    registry.disable("shell")
    assert registry.get("shell") is None
    assert "shell" not in registry.names()
    assert "shell" not in [spec.name for spec in registry.specs()]
    with pytest.raises(ValueError, match="already registered"):
        registry.register(_tool_named("shell"))
    with pytest.raises(KeyError, match="no tool named 'nope'"):
        registry.disable("nope")


def test_every_builtin_schema_forbids_unknown_fields_and_describes_every_field() -> None:
    for spec in builtin_registry().specs():
        schema = spec.parameters
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False, spec.name
        assert "title" not in schema
        assert len(spec.description) > 80, spec.name
        for field_name, field in schema["properties"].items():
            assert len(field.get("description", "")) > 15, (
                f"{spec.name}.{field_name} has no useful description"
            )


def test_an_arguments_docstring_is_its_description_on_one_line_and_its_type_its_constraint() -> None:
    class ProbeInput(ToolInput):
        path: NonEmpty
        """The file to probe,
        relative to the workspace root."""
        line: Positive | None = Field(default=None, description="Given explicitly.")

    schema = ProbeInput.model_json_schema()["properties"]
    assert schema["path"] == {
        "description": "The file to probe, relative to the workspace root.",
        "minLength": 1,
        "title": "Path",
        "type": "string",
    }
    assert schema["line"]["description"] == "Given explicitly."
    with pytest.raises(ValidationError, match="at least 1 character"):
        ProbeInput(path="")
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        ProbeInput(path="a", line=0)


def test_schemas_match_the_documented_arguments() -> None:
    shapes = {
        spec.name: (set(spec.parameters["properties"]), set(spec.parameters.get("required", [])))
        for spec in builtin_registry().specs()
    }
    assert shapes == {
        "read_file": ({"path", "offset", "limit"}, {"path"}),
        "write_file": ({"path", "content"}, {"path", "content"}),
        "edit_file": (
            {"path", "old_string", "new_string", "replace_all"},
            {"path", "old_string", "new_string"},
        ),
        "glob": ({"pattern", "path"}, {"pattern"}),
        "grep": ({"pattern", "path", "glob", "ignore_case", "output_mode"}, {"pattern"}),
        "shell": ({"command", "timeout_ms", "workdir", "run_in_background"}, {"command"}),
        "todo_write": ({"todos"}, {"todos"}),
        "apply_patch": ({"patch"}, {"patch"}),
        "notebook_read": ({"path", "offset", "limit", "include_outputs"}, {"path"}),
        "notebook_edit": ({"path", "cell_id", "index", "new_source", "cell_type", "edit_mode"}, {"path"}),
        "skill": ({"name"}, {"name"}),
        "web_fetch": ({"url"}, {"url"}),
        "web_search": ({"query", "limit"}, {"query"}),
        "memory": (
            {
                "command",
                "path",
                "view_range",
                "file_text",
                "old_str",
                "new_str",
                "insert_line",
                "insert_text",
                "old_path",
                "new_path",
            },
            {"command"},
        ),
        "knowledge_search": ({"query", "limit"}, {"query"}),
        "shell_output": ({"id"}, {"id"}),
        "shell_kill": ({"id"}, {"id"}),
        "lsp": ({"operation", "path", "line", "character"}, {"operation", "path"}),
        "worktree_create": ({"name", "base"}, {"name"}),
        "worktree_list": (set(), set()),
        "worktree_remove": ({"name", "force"}, {"name"}),
        "agent": ({"task", "tools", "worktree", "mode"}, {"task"}),
    }


@pytest.mark.parametrize(
    ("model", "arguments", "problem"),
    [
        (ReadFileInput, {"path": "a", "offset": 0}, "offset"),
        (ReadFileInput, {"path": "a", "limit": 0}, "limit"),
        (ReadFileInput, {"path": ""}, "path"),
        (ReadFileInput, {"path": "a", "lines": 3}, "lines"),
        (ReadFileInput, {"file_path": "a"}, "path"),
        (WriteFileInput, {"path": "a"}, "content"),
        (WriteFileInput, {"path": "a", "content": 3}, "content"),
        (EditFileInput, {"path": "a", "old_string": "x"}, "new_string"),
        (
            EditFileInput,
            {"path": "a", "old_string": "x", "new_string": "y", "replace_all": "maybe"},
            "replace_all",
        ),
        (GlobInput, {"pattern": ""}, "pattern"),
        (GrepInput, {"pattern": "x", "output_mode": "lines"}, "output_mode"),
        (GrepInput, {"pattern": "x", "case_insensitive": True}, "case_insensitive"),
        (ShellInput, {"command": "ls", "timeout_ms": 600_001}, "timeout_ms"),
        (ShellInput, {"command": "ls", "timeout_ms": 0}, "timeout_ms"),
        (ShellInput, {"command": ""}, "command"),
        (ShellInput, {"cmd": "ls"}, "cmd"),
    ],
)
def test_bad_arguments_fail_validation_naming_the_field(
    model: type[BaseModel], arguments: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(arguments)
    assert problem in {str(part) for error in caught.value.errors() for part in error["loc"]}


def test_good_arguments_validate_with_defaults() -> None:
    assert ReadFileInput.model_validate({"path": "a.py"}).offset is None
    assert (
        EditFileInput.model_validate({"path": "a", "old_string": "x", "new_string": "y"}).replace_all is False
    )
    assert GrepInput.model_validate({"pattern": "x"}).output_mode == "files_with_matches"
    assert ShellInput.model_validate({"command": "ls", "timeout_ms": 600_000}).timeout_ms == 600_000
