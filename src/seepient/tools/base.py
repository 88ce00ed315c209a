"""The Tool contract: a named, schema-checked function that *prepares* an action (reading what it needs through
the host reads) and, once the action is approved, carries it out through the executor the pipeline hands it
and tells the model what happened. Tools never touch the host themselves."""

from __future__ import annotations

import functools
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from seepient.protocol import (
    ActionExecutor,
    ActionKind,
    ActionPayload,
    ApprovedAction,
    HostReads,
    PathAccess,
    PreparedActionDraft,
    ToolSpec,
)

if TYPE_CHECKING:
    from seepient.models.base import Model
    from seepient.models.router import Purpose

InputT = TypeVar("InputT", bound=BaseModel)


@functools.cache
def _schema_text(model: type[BaseModel]) -> str:
    schema = model.model_json_schema()
    schema.pop("title", None)
    return json.dumps(schema)


def _input_schema(model: type[BaseModel]) -> dict[str, Any]:
    # Generating a schema costs milliseconds per tool and every model request offers every tool: generate
    # once per input model, and hand each caller its own copy to do with as it likes.
    return json.loads(_schema_text(model))  # type: ignore[no-any-return]


@dataclass
class ToolContext:
    """What a tool may use: the workspace, the session's ids, the path guard, the host reads and the executor."""

    workspace: Path
    session_id: str
    call_id: str
    paths: PathAccess
    executor: ActionExecutor
    """Carries out approved actions: a tool's ``execute`` hands it the ``ApprovedAction`` it was given."""
    reads: HostReads
    """Reads of the host, while preparing and for an approved read."""
    default_timeout_ms: int = 120_000
    extra: dict[str, Any] = field(default_factory=dict)
    model: Model | None = None
    """The model of the route the tool declared in ``model_purpose`` (for example ``media``), else None."""

    def draft(
        self, tool: str, kind: ActionKind, payload: ActionPayload, *, read_only: bool, summary: str
    ) -> PreparedActionDraft:
        """The prepared action of this call (its session and call ids) for ``tool``."""
        return PreparedActionDraft(
            session_id=self.session_id,
            call_id=self.call_id,
            tool=tool,
            kind=kind,
            payload=payload,
            read_only=read_only,
            summary=summary,
        )


@dataclass(frozen=True)
class ToolOutput:
    """What goes back to the model. ``is_error`` marks a failed action; ``data`` is for surfaces and audit."""

    text: str
    is_error: bool = False
    data: dict[str, Any] = field(default_factory=dict)


class ToolInputError(Exception):
    """Arguments that validate against the schema but still cannot be prepared (a missing file, an
    ambiguous edit). The message goes back to the model so it can retry."""


class Tool(ABC, Generic[InputT]):
    name: ClassVar[str]
    description: ClassVar[str]
    input_model: ClassVar[type[BaseModel]]
    read_only: ClassVar[bool] = False
    concurrency_safe: ClassVar[bool] = False
    max_result_chars: ClassVar[int] = 30_000
    model_purpose: ClassVar[Purpose | None] = None
    """A tool that asks a model itself (an image generator on the ``media`` route) names the purpose; the
    pipeline hands it that route's model (fallbacks, retries and breakers included) as ``ctx.model``."""

    def is_concurrency_safe(self, args: InputT) -> bool:
        """Whether this call may run alongside other calls of the same model step; by default the class flag.
        A tool whose safety depends on its input (a read-only shell line) overrides this."""
        return self.concurrency_safe

    def spec(self) -> ToolSpec:
        return ToolSpec(
            name=self.name, description=self.description, parameters=_input_schema(self.input_model)
        )

    @abstractmethod
    async def prepare(self, args: InputT, ctx: ToolContext) -> PreparedActionDraft:
        """Describe exactly what would happen; read what preparation needs through ``ctx.reads``."""

    @abstractmethod
    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        """Carry out an approved action (``ctx.executor.execute(action)``, or ``ctx.reads`` for a read) and
        say what happened. ``action`` has the draft's fields (``payload``, ``summary``…)."""
