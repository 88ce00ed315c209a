"""``read_editor_buffer``: the model reads a file as it is open in the user's editor (unsaved changes
included), offered only when the editor has ``fs/read_text_file``. The path goes through the same path guard
and read policy as ``read_file``; only the approved read asks the editor instead of the disk."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, ClassVar

from acp import RequestError

from seepient.protocol import ApprovedAction, PreparedActionDraft, ReadAction
from seepient.tools.base import ToolContext, ToolOutput
from seepient.tools.builtin.read import DEFAULT_READ_LIMIT, ReadFileInput, ReadFileTool

_log = logging.getLogger("seepient.acp")


class EditorReadTool(ReadFileTool):
    name: ClassVar[str] = "read_editor_buffer"
    description: ClassVar[str] = (
        "Read a file as it is open in the user's editor, unsaved changes included (read_file reads what is "
        "on disk, which is what edits apply to). Lines come back numbered like read_file's; offset and limit "
        "work the same way."
    )

    def __init__(self, read: Callable[[], Any]) -> None:
        self._read = read

    async def prepare(self, args: ReadFileInput, ctx: ToolContext) -> PreparedActionDraft:
        draft = await super().prepare(args, ctx)
        payload = draft.payload
        assert isinstance(payload, ReadAction)
        sourced = payload.model_copy(update={"params": {**payload.params, "source": "editor"}})
        return ctx.draft(self.name, sourced, summary=f"{draft.summary} in the editor")

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        payload = action.payload
        assert isinstance(payload, ReadAction)
        absolute = payload.paths[0]
        shown = payload.params.get("path") or absolute
        read = self._read()
        if read is None:
            return ToolOutput("The editor is not connected; use read_file.", is_error=True)
        try:
            answer = await read(session_id=ctx.session_id, path=absolute)
        except (RequestError, ConnectionError) as exc:
            _log.info("the editor did not read %s: %s", absolute, exc)
            return ToolOutput(f"The editor could not read {shown}: {exc}. Use read_file.", is_error=True)
        offset = payload.params.get("offset") or 1
        limit = payload.params.get("limit") or DEFAULT_READ_LIMIT
        return self._numbered_view(shown, answer.content, offset, limit)
