"""The tool registry: the tools a session offers the model, by name, in the order they were registered."""

from __future__ import annotations

import re
from typing import Any

from seepient.protocol import ToolSpec
from seepient.tools.base import Tool
from seepient.tools.builtin import BUILTIN_TOOL_TYPES
from seepient.tools.builtin.skill import SkillTool
from seepient.tools.builtin.web_fetch import WebFetchTool

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What every provider accepts as a function name (OpenAI and Anthropic both cap it at 64 characters)."""


class ToolRegistry:
    """Tools by name. A disabled tool stays registered (its name stays taken) but is neither offered to
    the model nor found by ``get``."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._disabled: set[str] = set()

    def register(self, tool: Tool[Any]) -> None:
        name = tool.name
        if not _TOOL_NAME.match(name):
            raise ValueError(
                f"tool name {name!r} is not allowed: use 1 to 64 letters, digits, '_' or '-' (providers refuse others)"
            )
        if name in self._tools:
            raise ValueError(f"a tool named {name!r} is already registered; tool names must be unique")
        self._tools[name] = tool

    def get(self, name: str) -> Tool[Any] | None:
        """The enabled tool called ``name``, or None."""
        if name in self._disabled:
            return None
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Enabled tool names in registration order."""
        return [name for name in self._tools if name not in self._disabled]

    def specs(self) -> list[ToolSpec]:
        """What the model is told about each enabled tool."""
        return [self._tools[name].spec() for name in self.names()]

    def disable(self, name: str) -> None:
        if name not in self._tools:
            known = ", ".join(self._tools) or "none"
            raise KeyError(f"no tool named {name!r} to disable (registered: {known})")
        self._disabled.add(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self.names())


def builtin_registry() -> ToolRegistry:
    """A registry holding one instance of every built-in tool."""
    registry = ToolRegistry()
    for tool_type in BUILTIN_TOOL_TYPES:
        registry.register(tool_type())
    registry.register(SkillTool())
    registry.register(WebFetchTool())
    return registry
