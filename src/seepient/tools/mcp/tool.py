"""One MCP server tool offered to the model as ``mcp__SERVER__TOOL``: arguments are checked against the
server's JSON schema before anything is sent, the call is an ``McpCall`` action, the result is cut to size."""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

import jsonschema
import mcp_types as types
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, RootModel

from seepient.protocol import ApprovedAction, PreparedActionDraft, ToolSpec
from seepient.protocol.actions import McpCall
from seepient.protocol.frozen import deferred_config
from seepient.tools.base import Tool, ToolContext, ToolInputError, ToolOutput
from seepient.tools.builtin._common import expect_payload
from seepient.tools.format import truncate_middle
from seepient.tools.mcp.client import McpCallFailed, McpServerConnection

MAX_NAME = 64
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_MAX_DESCRIPTION = 2_000
_MAX_ERRORS_SHOWN = 8


def exposed_name(server: str, tool: str) -> tuple[str | None, str]:
    """``mcp__SERVER__TOOL`` and an empty reason, or None and why the tool cannot be offered under that name."""
    name = f"mcp__{server}__{tool}"
    if not _NAME.match(tool):
        return (
            None,
            f"its name {tool!r} has characters tool names cannot carry (letters, digits, '_' and '-' only)",
        )
    if len(name) > MAX_NAME:
        return None, f"{name} is {len(name)} characters long and providers accept at most {MAX_NAME}"
    return name, ""


class McpArguments(RootModel[dict[str, Any]]):
    """Any JSON object; the server's own schema is checked in ``prepare``."""

    model_config = deferred_config()


def _schema(tool: types.Tool) -> dict[str, Any]:
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    schema.pop("title", None)
    return schema


class McpTool(Tool[McpArguments]):
    """A tool of a running MCP server. Instances carry their own name, description and schema."""

    name: ClassVar[str] = "mcp"
    description: ClassVar[str] = "a tool of an MCP server"
    input_model: ClassVar[type[BaseModel]] = McpArguments

    def __init__(self, connection: McpServerConnection, tool: types.Tool, name: str) -> None:
        annotations = tool.annotations
        self.connection = connection
        self.server_tool = tool.name
        self.read_only_hint = bool(annotations and annotations.read_only_hint is True)
        self.open_world_hint = not (annotations and annotations.open_world_hint is False)
        # Per-instance values for what the Tool contract declares per class.
        self.name = name  # type: ignore[misc]
        text = (tool.description or tool.title or tool.name).strip()
        self.description = f"[MCP server {connection.name}] {text}"[:_MAX_DESCRIPTION]  # type: ignore[misc]
        self.read_only = self.read_only_hint  # type: ignore[misc]
        self.concurrency_safe = self.read_only_hint  # type: ignore[misc]
        self.max_result_chars = connection.settings.max_result_chars  # type: ignore[misc]
        self._schema = _schema(tool)
        try:
            validator_type = jsonschema.validators.validator_for(self._schema)
            validator_type.check_schema(self._schema)
            self._validator: Any = validator_type(self._schema)
            self.schema_problem: str | None = None
        except SchemaError as exc:
            self._validator = None
            self.schema_problem = f"the server's input schema for {tool.name} is invalid: {exc.message}"

    def spec(self) -> ToolSpec:
        # "$schema" names a draft for validators; some providers refuse it in a function's parameters.
        parameters = {k: v for k, v in self._schema.items() if k != "$schema"}
        return ToolSpec(name=self.name, description=self.description, parameters=parameters)

    async def prepare(self, args: McpArguments, ctx: ToolContext) -> PreparedActionDraft:
        arguments = args.root
        if self._validator is None:
            raise ToolInputError(f"{self.name} cannot be called: {self.schema_problem}")
        errors = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if errors:
            lines = []
            for error in errors[:_MAX_ERRORS_SHOWN]:
                where = "/".join(str(p) for p in error.absolute_path) or "(arguments)"
                lines.append(f"- {where}: {error.message}")
            more = len(errors) - _MAX_ERRORS_SHOWN
            if more > 0:
                lines.append(f"- … and {more} more")
            raise ToolInputError(
                f"Invalid arguments for {self.name} (nothing was sent to the MCP server):\n"
                + "\n".join(lines)
                + f"\nExpected schema: {json.dumps(self._schema)[:1500]}"
            )
        payload = McpCall(
            server=self.connection.name,
            tool=self.server_tool,
            arguments=arguments,
            read_only_hint=self.read_only_hint,
            open_world_hint=self.open_world_hint,
        )
        shown = json.dumps(arguments, ensure_ascii=False)
        return ctx.draft(
            self.name,
            payload,
            read_only=self.read_only_hint,
            summary=f"MCP {self.connection.name}:{self.server_tool} {truncate_middle(shown, 200)}",
        )

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        call = expect_payload(action, McpCall)
        try:
            result = await self.connection.call(call.tool, dict(call.arguments))
        except McpCallFailed as exc:
            gone = " Its tools are no longer available in this session." if exc.server_gone else ""
            return ToolOutput(
                f"{exc}.{gone}",
                is_error=True,
                data={"mcp_server": call.server, "server_gone": exc.server_gone},
            )
        text = result_text(result)
        return ToolOutput(
            text,
            is_error=bool(result.is_error),
            data={"mcp_server": call.server, "mcp_tool": call.tool, "chars": len(text)},
        )


def result_text(result: types.CallToolResult) -> str:
    """The text the model reads: text blocks as they are; other content summarised, never inlined."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(block, types.ImageContent) else "audio"
            size = len(block.data) * 3 // 4
            parts.append(f"[{kind} content, {block.mime_type}, about {size:,} bytes; not shown]")
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                parts.append(f"[resource {resource.uri}]\n{resource.text}")
            else:
                parts.append(
                    f"[binary resource {resource.uri}, {resource.mime_type or 'unknown type'}; not shown]"
                )
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link {block.uri}: {block.name}]")
        else:
            parts.append(f"[{getattr(block, 'type', type(block).__name__)} content; not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    text = "\n".join(parts)
    return text if text else "(the tool returned no content)"
