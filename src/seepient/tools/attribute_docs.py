"""The docstring written below each argument of a tool's input class becomes that argument's description. Where
the class is written is noted as the class is created (its frame already holds the file and line); the class's
own lines are parsed only when its schema is made, which a session whose built-in schemas are recorded never
does (``recorded_schemas.py``).

pydantic's own ``use_attribute_docstrings`` finds the class's source by walking every frame through
``inspect.getmodule``, which scans ``sys.modules`` for each import-machinery frame: about 100 ms over the
built-in tools on the start path.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
import sys
import textwrap
from types import FrameType
from typing import Any

# ToolInput.__init_subclass__ → type.__new__ (C, no frame) → ModelMetaclass.__new__ → the class statement;
# a few more levels allow for a metaclass or __init_subclass__ in between.
_FRAMES_UP = 6
_WRITTEN_AT = "__seepient_written_at__"
_DESCRIBED = "__seepient_described__"


def note_definition(cls: type[Any]) -> None:
    """Note where ``cls`` is written (call it from ``__init_subclass__``)."""
    frame = _defining_frame(cls)
    if frame is not None:
        setattr(cls, _WRITTEN_AT, (frame.f_code.co_filename, frame.f_lineno))


def describe_from_docstrings(cls: type[Any]) -> None:
    """Give each argument of ``cls`` (and of the input classes it extends) that has a docstring and no
    description of its own that docstring as its description; once per class. A model already built is built
    again, so that its schema carries them."""
    if cls.__dict__.get(_DESCRIBED):
        return
    fields = cls.__pydantic_fields__
    changed = False
    for owner in cls.__mro__:
        written_at = owner.__dict__.get(_WRITTEN_AT)
        if written_at is None:
            continue
        for name, doc in _attribute_docstrings(owner, *written_at).items():
            field = fields.get(name)
            if field is not None and field.description is None:
                field.description = doc
                changed = True
    setattr(cls, _DESCRIBED, True)
    if changed and cls.__pydantic_complete__:
        cls.model_rebuild(force=True)


def _attribute_docstrings(cls: type[Any], filename: str, line: int) -> dict[str, str]:
    module = sys.modules.get(cls.__module__)
    lines = linecache.getlines(filename, module.__dict__ if module is not None else None)
    start = _class_line(lines, cls.__name__, line - 1)
    if start is None:
        return {}
    try:
        block = textwrap.dedent("".join(inspect.getblock(lines[start:])))
        tree = ast.parse(block)
    except (SyntaxError, IndexError, ValueError):
        return {}
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.ClassDef) or node.name != cls.__name__:
        return {}
    docs: dict[str, str] = {}
    for statement, following in zip(node.body, node.body[1:], strict=False):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _defining_frame(cls: type[Any]) -> FrameType | None:
    frame: FrameType | None = sys._getframe(2)
    for _ in range(_FRAMES_UP):
        if frame is None:
            return None
        if frame.f_globals.get("__name__") == cls.__module__:
            return frame
        frame = frame.f_back
    return None


def _class_line(lines: list[str], name: str, near: int) -> int | None:
    # The frame's line is the class statement's (its first line, or a line of a header spread over several).
    pattern = re.compile(rf"\s*class\s+{re.escape(name)}\b")
    for index in range(min(near, len(lines) - 1), -1, -1):
        if pattern.match(lines[index]):
            return index
    return None
