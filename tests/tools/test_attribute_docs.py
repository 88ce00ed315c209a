"""Arguments' docstrings become their descriptions, read from the class's own lines when its schema is made."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, create_model

from seepient.tools.base import NonEmpty, ToolInput


def test_defaults_constraints_and_explicit_fields_survive_the_docstrings() -> None:
    class SpreadOverLines(
        ToolInput,
    ):
        """A class docstring is not an argument's."""

        mode: Literal["a", "b"] = "a"
        """Which mode."""
        count: int = Field(default=3, ge=0)
        """How many."""
        name: NonEmpty
        plain: str = "x"
        "A single-quoted one."

    schema = SpreadOverLines.model_json_schema()
    properties = schema["properties"]
    assert properties["mode"]["description"] == "Which mode."
    assert properties["mode"]["default"] == "a"
    assert properties["count"] == {
        "default": 3,
        "description": "How many.",
        "minimum": 0,
        "title": "Count",
        "type": "integer",
    }
    assert "description" not in properties["name"] and properties["name"]["minLength"] == 1
    assert properties["plain"]["description"] == "A single-quoted one."
    assert schema["required"] == ["name"]
    assert schema["description"] == "A class docstring is not an argument's."


def test_a_subclass_documents_its_own_arguments_and_keeps_its_parents() -> None:
    class Parent(ToolInput):
        path: str
        """The parent's path."""

    class Child(Parent):
        extra: bool = False
        """The child's flag."""

    properties = Child.model_json_schema()["properties"]
    assert properties["path"]["description"] == "The parent's path."
    assert properties["extra"]["description"] == "The child's flag."


def test_a_class_made_without_source_simply_has_no_descriptions() -> None:
    made = create_model("Made", __base__=ToolInput, path=(str, ...))
    assert "description" not in made.model_json_schema()["properties"]["path"]
    assert made(path="a").path == "a"


def test_a_model_used_before_its_schema_is_made_still_describes_its_arguments() -> None:
    class Used(ToolInput):
        path: str
        """Where."""
        other: str = Field(default="x", description="stated")
        """Not this one: a stated description stands."""

    assert Used(path="a").path == "a" and Used.__pydantic_complete__  # its validator is built first
    properties = Used.model_json_schema()["properties"]
    assert properties["path"]["description"] == "Where."
    assert properties["other"]["description"] == "stated"
    assert Used.model_json_schema() == Used.model_json_schema()  # described once, and the same each time
