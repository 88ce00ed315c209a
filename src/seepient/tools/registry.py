"""The tool registry: the tools a session offers the model, by name, in the order they were registered."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from seepient.config.settings import Settings
from seepient.protocol import ToolSpec
from seepient.tools.base import Tool
from seepient.tools.builtin import BUILTIN_TOOL_TYPES
from seepient.tools.builtin.agent import AgentTool
from seepient.tools.builtin.knowledge import KnowledgeSearchTool
from seepient.tools.builtin.lsp import LspTool
from seepient.tools.builtin.memory import MemoryTool
from seepient.tools.builtin.shell_background import ShellKillTool, ShellOutputTool
from seepient.tools.builtin.skill import SkillTool
from seepient.tools.builtin.todo import TodoWriteTool
from seepient.tools.builtin.web_fetch import WebFetchTool
from seepient.tools.builtin.web_search import WebSearchTool
from seepient.tools.builtin.worktree import WorktreeCreateTool, WorktreeListTool, WorktreeRemoveTool

if TYPE_CHECKING:
    from seepient.context.skills import SkillCatalog
    from seepient.tools.builtin.agent import SubagentLauncher
    from seepient.tools.builtin.todo import TodoListener

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What every provider accepts as a function name (OpenAI and Anthropic both cap it at 64 characters)."""


class ToolRegistry:
    """Tools by name. A disabled tool stays registered (its name stays taken) but is neither offered to
    the model nor found by ``get``."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._disabled: set[str] = set()
        self._gone: dict[str, str] = {}
        self._only: frozenset[str] | None = None

    def register(self, tool: Tool[Any]) -> None:
        name = tool.name
        if not _TOOL_NAME.match(name):
            raise ValueError(
                f"tool name {name!r} is not allowed: use 1 to 64 letters, digits, '_' or '-' (providers refuse others)"
            )
        if name in self._tools:
            raise ValueError(f"a tool named {name!r} is already registered; tool names must be unique")
        self._tools[name] = tool
        self._gone.pop(name, None)

    def get(self, name: str) -> Tool[Any] | None:
        """The enabled tool called ``name``, or None."""
        if name in self._disabled or (self._only is not None and name not in self._only):
            return None
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Enabled tool names in registration order."""
        return [name for name in self._tools if self.get(name) is not None]

    def specs(self) -> list[ToolSpec]:
        """What the model is told about each enabled tool."""
        return [self._tools[name].spec() for name in self.names()]

    def disable(self, name: str) -> None:
        if name not in self._tools:
            known = ", ".join(self._tools) or "none"
            raise KeyError(f"no tool named {name!r} to disable (registered: {known})")
        self._disabled.add(name)

    def restrict(self, names: Iterable[str]) -> None:
        """Offer only ``names`` from now on, including tools registered later (a sub-agent's subset)."""
        self._only = frozenset(names)

    def unregister(self, name: str, reason: str) -> None:
        """Remove a tool that can no longer run (an MCP server's, when the server went away); a later call of
        ``name`` is told ``reason`` instead of "unknown tool"."""
        self._tools.pop(name, None)
        self._disabled.discard(name)
        self._gone[name] = reason

    def gone_reason(self, name: str) -> str | None:
        """Why ``name`` was unregistered, or None."""
        return self._gone.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self.names())


def builtin_tools(
    settings: Settings | None = None,
    *,
    skills: SkillCatalog | None = None,
    on_todos: TodoListener | None = None,
    subagents: SubagentLauncher | None = None,
) -> list[Tool[Any]]:
    """One instance of every built-in tool, in the order they are offered. ``settings`` configure those that
    need it (``webSearch``); a session hands its own state to the tools that use it: the skill catalogue its
    prompt lists, who hears of each new todo list, and the launcher of its sub-agents."""
    tools: list[Tool[Any]] = [
        TodoWriteTool(on_todos) if tool_type is TodoWriteTool else tool_type()
        for tool_type in BUILTIN_TOOL_TYPES
    ]
    tools += [
        SkillTool(skills),
        WebFetchTool(),
        WebSearchTool(settings.web_search if settings is not None else None),
        MemoryTool(),
        KnowledgeSearchTool(),
        ShellOutputTool(),
        ShellKillTool(),
        LspTool(),
        WorktreeCreateTool(),
        WorktreeListTool(),
        WorktreeRemoveTool(),
        AgentTool(subagents),
    ]
    return tools


def builtin_registry(settings: Settings | None = None) -> ToolRegistry:
    """A registry holding one instance of every built-in tool, none of them tied to a session."""
    registry = ToolRegistry()
    for tool in builtin_tools(settings):
        registry.register(tool)
    return registry
