"""The Tool contract: a named, schema-checked function that *prepares* an action (reading what it needs through
the host reads) and, once the action is approved, carries it out through the executor the pipeline hands it
and tells the model what happened. Tools never touch the host themselves."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, TypeVar, get_args

from pydantic import BaseModel, Field

from seepient.protocol import (
    ActionExecutor,
    ActionKind,
    ActionPayload,
    ApprovedAction,
    HostReads,
    PathAccess,
    PreparedActionDraft,
    ToolSpec,
    action_kind,
)
from seepient.protocol.errors import InvalidInputError
from seepient.protocol.frozen import deferred_config
from seepient.tools.attribute_docs import describe_from_docstrings, note_definition
from seepient.tools.recorded_schemas import made_parameters, recorded_parameters

if TYPE_CHECKING:
    from seepient.models.base import Model
    from seepient.models.router import Purpose

InputT = TypeVar("InputT", bound=BaseModel)

_READ_ONLY_KINDS = frozenset({ActionKind.READ, ActionKind.FETCH, ActionKind.STATE})


@functools.lru_cache(maxsize=4096)
def _shared_spec(name: str, description: str, model: type[BaseModel]) -> ToolSpec:
    """One spec per tool for every session and request, to be read and never changed: every model request
    offers every tool, and a schema per request cost milliseconds to make, and on a server hundreds of
    copies living as long as their turns, which every full pass of the garbage collector then walked."""
    parameters = recorded_parameters(model)
    if parameters is None:
        parameters = made_parameters(model)
    return ToolSpec(name=name, description=description, parameters=parameters)


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
        self, tool: str, payload: ActionPayload, *, summary: str, read_only: bool | None = None
    ) -> PreparedActionDraft:
        """The prepared action of this call (its session and call ids) for ``tool``, of the payload's kind.

        ``read_only`` defaults to what the kind is: reads, fetches and the session's own state change nothing
        on the host; a tool whose payload can be either (worktree, process control, MCP) says which it is.
        """
        kind = action_kind(payload)
        return PreparedActionDraft(
            session_id=self.session_id,
            call_id=self.call_id,
            tool=tool,
            kind=kind,
            payload=payload,
            read_only=kind in _READ_ONLY_KINDS if read_only is None else read_only,
            summary=summary,
        )


@dataclass(frozen=True)
class ToolOutput:
    """What goes back to the model. ``is_error`` marks a failed action; ``data`` is for surfaces and audit."""

    text: str
    is_error: bool = False
    data: dict[str, Any] = field(default_factory=dict)


class ToolInputError(InvalidInputError):
    """Arguments that validate against the schema but still cannot be prepared (a missing file, an
    ambiguous edit). The message goes back to the model so it can retry."""


def _one_line_descriptions(schema: dict[str, Any]) -> None:
    # A docstring wraps where the source does; the model reads each description as the one line it means.
    for argument in schema.get("properties", {}).values():
        if isinstance(argument.get("description"), str):
            argument["description"] = " ".join(argument["description"].split())


class ToolInput(BaseModel):
    """A tool's arguments: unknown fields are refused, so a misspelled argument is an error the model sees.

    As a tool's docstring is its description, an argument's docstring (the string right below it) is the
    description the model reads; its type says what it accepts (``NonEmpty``, ``Positive``, ``Literal``…).
    """

    model_config = deferred_config(extra="forbid", json_schema_extra=_one_line_descriptions)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        note_definition(cls)

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        describe_from_docstrings(cls)
        return super().model_json_schema(*args, **kwargs)


NonEmpty = Annotated[str, Field(min_length=1)]
"""A string argument that may not be empty (a path, a pattern, a command)."""
Positive = Annotated[int, Field(ge=1)]
"""A whole number from 1 (a 1-based line number, a count)."""
NonNegative = Annotated[int, Field(ge=0)]
"""A whole number from 0 (a 0-based index)."""


class Tool(ABC, Generic[InputT]):
    name: ClassVar[str]
    description: ClassVar[str]
    input_model: ClassVar[type[BaseModel]]
    read_only: ClassVar[bool] = False
    concurrency_safe: ClassVar[bool] = False
    max_result_chars: ClassVar[int] = 30_000
    runs_foreground_commands: ClassVar[bool] = False
    """Its calls usually become a foreground command in the jail: once the model starts such a call, the
    executor may set that command's jail up while the rest of the call streams (nothing runs before approval)."""
    model_purpose: ClassVar[Purpose | None] = None
    """A tool that asks a model itself (an image generator on the ``media`` route) names the purpose; the
    pipeline hands it that route's model (fallbacks, retries and breakers included) as ``ctx.model``."""

    def __init_subclass__(
        cls, *, read_only: bool | None = None, concurrency_safe: bool | None = None, **kwargs: Any
    ) -> None:
        """``class GrepTool(Tool[GrepInput], read_only=True, concurrency_safe=True)``: the flags as class
        arguments, ``input_model`` taken from the type argument and ``description`` (what the model reads) from
        the class docstring, unless the class sets them itself."""
        super().__init_subclass__(**kwargs)
        if read_only is not None:
            cls.read_only = read_only
        if concurrency_safe is not None:
            cls.concurrency_safe = concurrency_safe
        if "description" not in cls.__dict__ and cls.__doc__:
            cls.description = " ".join(cls.__doc__.split())
        if "input_model" not in cls.__dict__:
            for base in getattr(cls, "__orig_bases__", ()):
                arguments = get_args(base)
                if arguments and isinstance(arguments[0], type) and issubclass(arguments[0], BaseModel):
                    cls.input_model = arguments[0]

    def is_concurrency_safe(self, args: InputT) -> bool:
        """Whether this call may run alongside other calls of the same model step; by default the class flag.
        A tool whose safety depends on its input (a read-only shell line) overrides this."""
        return self.concurrency_safe

    def tools_named(self, args: InputT) -> Sequence[str]:
        """Other tools this call hands on by name (a sub-agent's tool list): the pipeline waits for any that
        may still arrive (an MCP server starting in the background) before preparing the call."""
        return ()

    def spec(self) -> ToolSpec:
        return _shared_spec(self.name, self.description, self.input_model)

    @abstractmethod
    async def prepare(self, args: InputT, ctx: ToolContext) -> PreparedActionDraft:
        """Describe exactly what would happen; read what preparation needs through ``ctx.reads``."""

    @abstractmethod
    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        """Carry out an approved action (``ctx.executor.execute(action)``, or ``ctx.reads`` for a read) and
        say what happened. ``action`` has the draft's fields (``payload``, ``summary``…)."""
