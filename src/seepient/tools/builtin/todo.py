"""``todo_write``: the task list the model keeps for the session, sent whole each time and shown by every surface.

It changes only the session's own state, so it is prepared as a ``state`` action: policy lets it through
without asking (a deny rule naming the tool still refuses it) and the audit log records it like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from seepient.protocol import ApprovedAction, PreparedActionDraft, SessionStateChange, TodoItem
from seepient.tools.base import Tool, ToolContext, ToolInput, ToolInputError, ToolOutput

MAX_TODOS = 100
_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

TodoListener = Callable[[tuple[TodoItem, ...]], None]


class TodoEntry(ToolInput):
    id: str | None = Field(default=None, min_length=1, max_length=64)
    """Keep an item's id when you resend it."""
    content: str = Field(min_length=1, max_length=2000)
    """What to do, in one imperative line."""
    status: Literal["pending", "in_progress", "completed"]


class TodoWriteInput(ToolInput):
    todos: list[TodoEntry] = Field(max_length=MAX_TODOS)
    """The whole list, in order; it replaces the previous one."""

    @model_validator(mode="after")
    def _one_in_progress(self) -> TodoWriteInput:
        working = [t.content for t in self.todos if t.status == "in_progress"]
        if len(working) > 1:
            raise ValueError(
                f"{len(working)} items are in_progress; mark exactly one in_progress at a time "
                "(the one you are working on now) and the others pending or completed"
            )
        given = [t.id for t in self.todos if t.id is not None]
        duplicates = sorted({i for i in given if given.count(i) > 1})
        if duplicates:
            raise ValueError(f"item ids must be unique; repeated: {', '.join(duplicates)}")
        if any(not t.content.strip() for t in self.todos):
            raise ValueError("an item's content is blank; describe the task or drop the item")
        return self


class TodoWriteTool(Tool[TodoWriteInput], read_only=True):
    """Keep a todo list for multi-step work: send the whole list each time (it replaces the previous one),
    each item with content and status pending, in_progress or completed. Keep exactly one item in_progress
    while you work, mark items completed as soon as they are done, and keep each item's id when you resend it.
    The user sees the list. Skip it for trivial one-step tasks."""

    name: ClassVar[str] = "todo_write"
    """Nothing on the host changes, so it is offered in plan mode as well."""
    concurrency_safe: ClassVar[bool] = False

    def __init__(self, on_change: TodoListener | None = None) -> None:
        """``on_change`` hears of every new list (the session, which emits ``todo_updated``)."""
        self._items: tuple[TodoItem, ...] = ()
        self._listener = on_change

    @property
    def items(self) -> tuple[TodoItem, ...]:
        """The session's current list."""
        return self._items

    async def prepare(self, args: TodoWriteInput, ctx: ToolContext) -> PreparedActionDraft:
        items = _with_ids(args.todos)
        counts = {s: sum(1 for i in items if i.status == s) for s in ("pending", "in_progress", "completed")}
        summary = (
            f"todo list: {len(items)} item(s), {counts['in_progress']} in progress, "
            f"{counts['completed']} completed"
        )
        return ctx.draft(
            self.name,
            SessionStateChange(key="todos", value=[i.model_dump() for i in items]),
            summary=summary,
        )

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        payload = action.payload
        if not isinstance(payload, SessionStateChange) or payload.key != "todos":
            raise ToolInputError(f"todo_write cannot carry out a {payload.type} action")
        items = tuple(TodoItem.model_validate(v) for v in payload.value or ())
        self._items = items
        if self._listener is not None:
            self._listener(items)
        return ToolOutput(text=render_todos(items), data={"todos": [i.model_dump() for i in items]})


def render_todos(items: tuple[TodoItem, ...]) -> str:
    """The list as the model (and a terminal) reads it."""
    if not items:
        return "Todo list cleared."
    done = sum(1 for i in items if i.status == "completed")
    lines = [f"Todo list updated ({done}/{len(items)} completed):"]
    lines += [f"{_MARK[i.status]} {i.content}" for i in items]
    return "\n".join(lines)


def _with_ids(entries: list[TodoEntry]) -> list[TodoItem]:
    """Items without an id get the first free ``N`` by position, so ids stay unique and short."""
    taken = {e.id for e in entries if e.id is not None}
    items: list[TodoItem] = []
    counter = 0
    for entry in entries:
        item_id = entry.id
        if item_id is None:
            counter += 1
            while str(counter) in taken:
                counter += 1
            item_id = str(counter)
            taken.add(item_id)
        items.append(TodoItem(id=item_id, content=entry.content.strip(), status=entry.status))
    return items
