"""``Agent``: the runtime in your own Python process, with sync (``chat``) and async (``achat``, ``stream``) turns.

An ``Agent`` is used either synchronously or from one event loop, not both: its session, model client and
locks belong to the loop that first ran it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from seepient.approval import Approver
from seepient.config import SeepientPaths
from seepient.protocol import ApprovalRequest, ApprovalResponse, ImagePart, RuntimeEvent, TurnCompleted
from seepient.protocol.fields import same_named
from seepient.runtime import Session, SessionOptions, TurnOutcome
from seepient.runtime.hooks import DEFAULT_FUNCTION_TIMEOUT_S, FunctionHook, HookEvent, HookFunction
from seepient.surfaces.sdk._common import ApprovalCallback, Reply, ask_callback
from seepient.tools.base import Tool

__all__ = ["Agent"]


class _CallbackApprover:
    def __init__(self, callback: ApprovalCallback) -> None:
        self._callback = callback

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse:
        return await ask_callback(self._callback, request)


class Agent:
    """An agent over ``workspace``.

    ``approver`` answers actions policy asks about: a callable taking an ``ApprovalRequest`` and returning
    ``True``/``False``, an ``ApprovalDecision`` or an ``ApprovalResponse`` (sync or async), or an object with
    ``async decide(request)``. Without one, such actions are refused with a reason the model sees, unless
    ``auto_approve`` is set (the CLI's ``-y``). Denials by policy are never overridden.

    ``sandbox`` left ``None`` is the user's own choice from their settings, never the project's: a workspace's
    ``.seepient/settings.json`` can only keep the sandbox on. A project's settings count as far as the user's
    trust store says (``seepient trust``): untrusted, they can only make Seepient stricter.

    ``hooks`` maps an event (``preToolUse``, ``postToolUse``, ``sessionStart``, ``stop``) to callables, or is a
    list of ``FunctionHook`` (with tool matchers); ``add_hook`` adds one later. See ``seepient.runtime.hooks``.

    Example::

        from seepient import Agent

        agent = Agent(workspace=".", model="replay:script.yaml", mode="ask-untrusted", approver=lambda r: True)
        print(agent.chat("Fix the failing test").text)
    """

    def __init__(
        self,
        workspace: str | Path = ".",
        model: str | None = None,
        mode: str | None = None,
        approver: ApprovalCallback | Approver | None = None,
        *,
        auto_approve: bool = False,
        tools: Sequence[Tool[Any]] = (),
        sandbox: Literal["auto", "off"] | None = None,
        config_file: str | Path | None = None,
        home: str | Path | None = None,
        max_steps: int | None = None,
        hooks: Mapping[HookEvent, HookFunction | Sequence[HookFunction]] | Sequence[FunctionHook] = (),
    ) -> None:
        if approver is not None and not callable(approver) and not hasattr(approver, "decide"):
            raise TypeError("approver must be a callable or an object with async decide(request)")
        resolved: Approver | None
        if approver is None:
            resolved = None
        elif hasattr(approver, "decide"):
            resolved = approver  # type: ignore[assignment]
        else:
            resolved = _CallbackApprover(approver)  # type: ignore[arg-type]
        self._options = SessionOptions(
            workspace=Path(workspace),
            model=model,
            mode=mode,
            approver=resolved,
            auto_approve=auto_approve,
            surface="sdk",
            sandbox=sandbox,
            config_file=Path(config_file) if config_file is not None else None,
            max_steps=max_steps,
            paths=SeepientPaths(home=Path(home).expanduser().absolute()) if home is not None else None,
            extra_tools=list(tools),
            hooks=_function_hooks(hooks),
        )
        self._session: Session | None = None
        self._listeners: list[Callable[[RuntimeEvent], None]] = []
        self._runner: asyncio.Runner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- the session ----------------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        """The runtime session, opened on first use (settings and model errors surface here)."""
        if self._session is None:
            self._session = Session.open(self._options)
            self._session.subscribe(self._dispatch)
        return self._session

    def _dispatch(self, event: RuntimeEvent) -> None:
        for listener in list(self._listeners):
            listener(event)

    def tool_names(self) -> list[str]:
        return self.session.registry.names()

    def add_hook(
        self,
        event: HookEvent,
        function: HookFunction,
        *,
        matcher: str | None = None,
        timeout_s: float = DEFAULT_FUNCTION_TIMEOUT_S,
    ) -> None:
        """Run ``function`` (sync or async) at ``event`` (``preToolUse``, ``postToolUse``, ``sessionStart``,
        ``stop``) for tools whose name ``matcher`` (a regular expression) matches. It gets the event's input
        dict and returns ``None`` to pass or an answer dict such as ``{"decision": "block", "reason": "..."}``
        or ``{"decision": "modify", "arguments": {...}}`` (then validated, and checked by policy, again); one
        that raises or times out blocks. The protocol is documented in ``seepient.runtime.hooks``."""
        hook = FunctionHook(event, function, matcher, timeout_s)
        if self._session is None:
            self._options.hooks.append(hook)
        else:
            self._session.hooks.functions.append(hook)

    def register_tool(self, tool: Tool[Any]) -> None:
        """Offer ``tool`` to the model from the next request on; its actions go through policy like any other."""
        if self._session is None:
            self._options.extra_tools.append(tool)
        else:
            self._session.registry.register(tool)

    # -- async turns ----------------------------------------------------------------------------------

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError(
                "this Agent already ran on another event loop; use one Agent per loop "
                "(chat() runs its own loop, so do not mix chat() with achat()/stream())"
            )

    async def achat(self, prompt: str, *, images: Sequence[bytes | ImagePart] = ()) -> Reply:
        """Run one turn and return its ``Reply``. ``images`` (bytes of PNG, JPEG, GIF or WebP files) send the
        turn to the vision route."""
        events: list[RuntimeEvent] = []
        self._bind_loop()
        self._listeners.append(events.append)
        try:
            outcome = await self.session.run(prompt, _image_parts(images))
        finally:
            self._listeners.remove(events.append)
        return _reply(outcome, events)

    async def stream(
        self, prompt: str, *, images: Sequence[bytes | ImagePart] = ()
    ) -> AsyncIterator[RuntimeEvent]:
        """Run one turn, yielding its events as they happen.

        Closing the stream early interrupts the turn. Python closes an abandoned async generator only when it
        is collected, so to stop a turn by leaving the loop, iterate inside
        ``async with contextlib.aclosing(agent.stream(prompt)) as events:``.
        """
        self._bind_loop()
        queue: asyncio.Queue[RuntimeEvent] = asyncio.Queue()
        self._listeners.append(queue.put_nowait)
        task = asyncio.create_task(self.session.run(prompt, _image_parts(images)))
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    event = getter.result()
                    yield event
                    if isinstance(event, TurnCompleted):
                        break
                    continue
                getter.cancel()
                task.result()  # the turn failed before completing: raise its error
                while not queue.empty():
                    yield queue.get_nowait()
                break
        finally:
            self._listeners.remove(queue.put_nowait)
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.aclose()
            self._session = None

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- sync turns -----------------------------------------------------------------------------------

    def chat(self, prompt: str, *, images: Sequence[bytes | ImagePart] = ()) -> Reply:
        """``achat`` for code without an event loop (scripts, notebooks without ``await``)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "chat() cannot run inside an event loop: use `await agent.achat(prompt)` there"
            )
        if self._runner is None:
            self._runner = asyncio.Runner()
        return self._runner.run(self.achat(prompt, images=images))

    def close(self) -> None:
        if self._runner is not None:
            self._runner.run(self.aclose())
            self._runner.close()
            self._runner = None

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _function_hooks(
    hooks: Mapping[HookEvent, HookFunction | Sequence[HookFunction]] | Sequence[FunctionHook],
) -> list[FunctionHook]:
    """``{"preToolUse": fn}`` or ``{"stop": [fn, fn]}`` (every tool), or ``FunctionHook`` objects (matchers)."""
    if isinstance(hooks, Mapping):
        found: list[FunctionHook] = []
        for event, functions in hooks.items():
            for function in functions if isinstance(functions, Sequence) else [functions]:
                found.append(FunctionHook(event, function))
        return found
    for hook in hooks:
        if not isinstance(hook, FunctionHook):
            raise TypeError("hooks must be a mapping of event to callables, or FunctionHook objects")
    return list(hooks)


def _reply(outcome: TurnOutcome, events: list[RuntimeEvent]) -> Reply:
    return Reply(
        **same_named(outcome, ("turn_id", "text", "reason", "steps", "usage", "error")),
        events=tuple(events),
    )


def _image_parts(images: Sequence[bytes | ImagePart]) -> tuple[ImagePart, ...]:
    """Bytes become inline image parts typed by their content; ``ValueError`` names the one that is not."""
    parts = []
    for index, image in enumerate(images):
        try:
            parts.append(image if isinstance(image, ImagePart) else ImagePart.from_bytes(image))
        except ValueError as exc:
            raise ValueError(f"images[{index}]: {exc}") from None
    return tuple(parts)
