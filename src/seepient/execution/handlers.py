"""How an execution backend carries out an approved action: by the handler its table names for the payload's
type. A payload without a handler, and one a backend's table refuses, is an ``UnsupportedAction``; anything
but a cleared ``ApprovedAction`` is refused before a handler is looked up."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel

from seepient.protocol.approved import ApprovedAction
from seepient.protocol.executor import NOT_EXECUTED
from seepient.protocol.outcomes import Outcome
from seepient.protocol.refusals import UnsupportedAction

Handler = Callable[[Any, Any, ApprovedAction], Awaitable[Outcome]]
"""``handler(backend, payload, action)``: the backend, the action's payload (of the type the table keys it
by) and the approved action itself."""

HandlerTable = Mapping[type[BaseModel], Handler]


async def run_handler(backend: object, handlers: HandlerTable, action: ApprovedAction) -> Outcome:
    """Carry out ``action`` with ``backend``'s handler for its payload type."""
    if not isinstance(action, ApprovedAction):
        # A draft reads like an approved action (same fields), so only the type says that it was cleared.
        raise TypeError(
            f"an executor runs approved actions only, not a {type(action).__name__}; the tool-call pipeline "
            "makes the ApprovedAction after policy and approval"
        )
    problem = action.why_not_cleared()
    if problem is not None:
        raise PermissionError(f"{action.tool}: {problem}")
    payload_type = type(action.payload)
    handler = handlers.get(payload_type)
    if handler is None:
        why = NOT_EXECUTED.get(payload_type, "this backend has no handler for it")
        raise UnsupportedAction(
            f"{action.tool}: a {payload_type.__name__} is not executed: {why}; nothing ran"
        )
    return await handler(backend, action.payload, action)


def refusal(what: str, instead: str, *, backend: str) -> Handler:
    """A handler that refuses ``what`` on ``backend`` and says what to do ``instead``; nothing runs."""

    async def refuse(_backend: object, _payload: object, _action: ApprovedAction) -> Outcome:
        raise UnsupportedAction(f"{what} not available with the {backend} backend: {instead}")

    return refuse
