"""The earlier turns of a continued session on screen: a stored history drawn with the live transcript's
widgets (prompts, answers, tool calls with their outcomes), so the person sees what the model remembers."""

from __future__ import annotations

import re
from collections.abc import Iterable

from textual.widget import Widget

from seepient.protocol import Message, ToolCall
from seepient.surfaces.tui.assistant_text import AssistantText
from seepient.surfaces.tui.widgets import Notice, ToolCallView, UserPrompt

_ATTACHED = re.compile(r'\n\n<attached_file path="([^"]*)">\n.*?\n</attached_file>', re.DOTALL)
"""An ``@`` file ``runtime.mentions.with_attachments`` added to a prompt: shown by its path, not its text."""


def stored_transcript(history: Iterable[Message]) -> list[Widget]:
    """The widgets the live transcript showed for ``history``, in order. A tool call whose result was never
    stored (the process ended mid-call) stays marked as unfinished."""
    widgets: list[Widget] = []
    calls: dict[str, ToolCallView] = {}
    for message in history:
        if message.role == "user":
            attached = _ATTACHED.findall(message.content)
            widgets.append(UserPrompt(_ATTACHED.sub("", message.content), images=len(message.images)))
            widgets.extend(Notice(f"attached @{path}") for path in attached)
        elif message.role == "assistant":
            if message.content.strip():
                widgets.append(AssistantText(message.content))
            for call in message.tool_calls:
                calls[call.id] = view = ToolCallView(call)
                widgets.append(view)
        elif message.role == "tool":
            view = calls.pop(message.tool_call_id or "", None)
            if view is None:  # a result whose call the compacted history dropped: still worth showing
                orphan = ToolCall(id=message.tool_call_id or "", name=message.name or "tool", arguments={})
                view = ToolCallView(orphan)
                widgets.append(view)
            view.finish("error" if message.is_error else "ok", message.content)
    return widgets
