"""The Tool contract: a named, schema-checked function that *prepares* an action and later runs it through
the executor the pipeline hands it. Tools never touch the host themselves."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from seepient.protocol import ActionExecutor, PathAccess, PreparedActionDraft, ToolSpec

InputT = TypeVar("InputT", bound=BaseModel)


@dataclass
class ToolContext:
    """What a tool may use: the workspace, the session's ids, the path guard and the executor."""

    workspace: Path
    session_id: str
    call_id: str
    paths: PathAccess
    executor: ActionExecutor
    default_timeout_ms: int = 120_000
    extra: dict[str, Any] = field(default_factory=dict)


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

    def spec(self) -> ToolSpec:
        schema = self.input_model.model_json_schema()
        schema.pop("title", None)
        return ToolSpec(name=self.name, description=self.description, parameters=schema)

    @abstractmethod
    async def prepare(self, args: InputT, ctx: ToolContext) -> PreparedActionDraft:
        """Describe exactly what would happen; read what preparation needs through ``ctx.executor``."""

    @abstractmethod
    async def execute(self, action: PreparedActionDraft, ctx: ToolContext) -> ToolOutput:
        """Carry out an approved action through ``ctx.executor``."""
