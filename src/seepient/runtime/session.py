"""The ``Session`` facade: the one object surfaces talk to. ``Session.open`` assembles it for a workspace
(``runtime/assembly.py``) and it runs turns one at a time."""

from __future__ import annotations

import asyncio

from seepient.config import SettingsError
from seepient.config.settings import normalise_mode
from seepient.models.base import Model
from seepient.models.router import Purpose
from seepient.protocol import (
    CompactionEvent,
    ImagePart,
    Message,
    RuntimeEvent,
    TodoItem,
    ToolCall,
    new_id,
)
from seepient.runtime.assembly import SessionParts, assemble, auto_mode_classifier, model_id
from seepient.runtime.events import EventListener
from seepient.runtime.loop import PLAN_APPROVED_PROMPT, TurnOutcome
from seepient.runtime.options import SessionOptions
from seepient.runtime.pipeline import CallResult
from seepient.tools.builtin.todo import TodoWriteTool

__all__ = ["Session", "SessionOptions", "TurnOutcome"]


class Session:
    """One conversation in one workspace: turns, actions Seepient prepares itself, events and mode switches."""

    def __init__(self, parts: SessionParts) -> None:
        self.id = parts.session_id
        self.workspace = parts.workspace
        self.settings = parts.settings
        self.mode = parts.mode
        self.model_spec = parts.model.name
        self.registry = parts.registry
        self.audit = parts.audit
        self.sandbox = parts.sandbox
        self.context = parts.context
        self.hooks = parts.hooks
        """The session's hooks; ``hooks.add(event, fn, matcher=...)`` registers a Python callable."""
        self.mcp = parts.mcp
        """The session's MCP servers; they start with the first turn (or ``await session.start_mcp()``)."""
        self._loop = parts.loop
        self._parts = parts
        self._lock = asyncio.Lock()

    @classmethod
    def open(cls, options: SessionOptions) -> Session:
        """Build a session; configuration problems raise ``SettingsError`` or ``ModelError`` before any turn."""
        return cls(assemble(options, open_session=cls.open))

    @property
    def history(self) -> tuple[Message, ...]:
        """The messages the model has seen so far (without the system prompt)."""
        return tuple(self._parts.history)

    @property
    def todos(self) -> tuple[TodoItem, ...]:
        """The todo list the model keeps with ``todo_write`` (empty until it writes one)."""
        tool = self.registry.get(TodoWriteTool.name)
        return tool.items if isinstance(tool, TodoWriteTool) else ()

    def set_mode(self, mode: str) -> str:
        """Switch the consent mode for the next action (a surface's mode toggle); returns the canonical name.

        Raises ``SettingsError`` for an unknown mode or one the managed settings switch off."""
        policy, deps = self._parts.policy, self._parts.deps
        canonical = normalise_mode(mode)
        if canonical in policy.rules.disabled_modes:
            raise SettingsError(f"the managed settings switch the {canonical} mode off")
        policy.mode = canonical
        self.context.set_consent_mode(canonical)
        if canonical == "auto" and deps.classifier is None:
            deps.classifier = auto_mode_classifier(self._parts.router.efficient() or self._parts.model)
        elif canonical != "auto":
            deps.classifier = None
        self.mode = canonical
        return canonical

    async def compact(self) -> bool:
        """Compact the history now (``/compact``); False when there was nothing to shorten."""
        async with self._lock:
            result = await self.context.fit(
                self.context.system_prompt(), self._parts.history, tuple(self.registry.specs()), force=True
            )
            if result is None:
                return False
            self._parts.history[:] = result.messages
            self._parts.events.emit(CompactionEvent, turn_id=None, **result.event_fields())
            return True

    def subscribe(self, listener: EventListener) -> None:
        self._parts.events.subscribe(listener)

    def events_since(self, seq: int) -> list[RuntimeEvent]:
        return self._parts.events.since(seq)

    def model_for(self, purpose: Purpose) -> Model:
        """The model for ``purpose`` at the standard tier: its route from the settings, with ``--model`` as its
        primary when given."""
        return self._parts.router.route(purpose, "standard")

    async def run(
        self, prompt: str, images: tuple[ImagePart, ...] = (), *, plan: bool = False
    ) -> TurnOutcome:
        """Run one turn. Turns never overlap: a second call waits for the first.

        With ``images`` the turn is answered by the ``vision`` route. With ``plan`` it is a planning turn (on
        the ``plan`` route unless it carries images): only read-only tools are offered and run, and the final
        text is the plan; the surface approves it and continues with an ordinary turn in the same history."""
        # Images decide the route even in plan mode: a plan model that cannot see them would answer blind.
        purpose: Purpose | None = "vision" if images else ("plan" if plan else None)
        async with self._lock:
            await self.mcp.start()
            if purpose is None:
                return await self._loop.run_turn(prompt)
            model = self.model_for(purpose)
            return await self._loop.run_turn(
                prompt, images, model=model, model_name=model_id(model.name), plan=plan
            )

    async def carry_out_plan(self) -> TurnOutcome:
        """Continue after the user approved the plan the last planning turn ended with: an ordinary turn in
        the same history, with every tool offered again (each action still goes through policy)."""
        return await self.run(PLAN_APPROVED_PROMPT)

    async def perform(self, call: ToolCall) -> CallResult:
        """Run one action Seepient itself prepared for the user (``seepient commit``'s ``git commit``), not
        the model's, through the same pipeline: policy, approval, execution and audit."""
        async with self._lock:
            await self.mcp.start()
            await self.mcp.ready()
            return await self._parts.pipeline.run(call, new_id("turn"))

    async def start_mcp(self) -> None:
        """Start the configured MCP servers now rather than with the first turn (to list their tools);
        problems become ``error`` events and the session goes on."""
        async with self._lock:
            await self.mcp.start()
            await self.mcp.ready()

    async def aclose(self) -> None:
        # Background processes and language servers die with the session.
        await self._parts.deps.executor.aclose()
        await self.mcp.aclose()
        await self._parts.model.aclose()
        if self._parts.owns_router:
            await self._parts.router.aclose()
        self.audit.close()
