"""``@path`` mentions in a prompt: the workspace files offered for completion (ignore files respected, sensitive
ones left out, never anything outside the workspace), and attaching a mentioned file, which is an ordinary
``read_file`` action of the session: policy, approval and the audit log see it like any other read."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from seepient.execution.search import TreeWalker
from seepient.policy.paths import PathGuard
from seepient.protocol import PathDenied, ToolCall, new_id

if TYPE_CHECKING:
    from seepient.runtime.session import Session

MAX_LISTED = 20_000
"""Files walked for completion at most: a huge tree still completes what it reached, and quickly."""
_MENTION = re.compile(r"(?<!\S)@(\S+)")


def workspace_files(workspace: Path, *, seepient_home: Path) -> list[str]:
    """Workspace-relative paths of the files a completion may offer, in path order."""
    guard = PathGuard(workspace, seepient_home=seepient_home)
    listed = []
    for relative, _ in islice(TreeWalker(guard.workspace).files(), MAX_LISTED):
        try:
            guard.for_read(str(guard.workspace / relative))
        except (PathDenied, ValueError):
            continue
        listed.append(relative)
    return listed


def complete(files: list[str], fragment: str, *, limit: int = 8) -> list[str]:
    """Paths starting with ``fragment`` first, then those whose file name does, then those containing it."""
    lowered = fragment.lower()
    starts = [f for f in files if f.lower().startswith(lowered)]
    names = [f for f in files if f not in starts and os.path.basename(f).lower().startswith(lowered)]
    rest = [f for f in files if lowered in f.lower() and f not in starts and f not in names]
    return [*starts, *names, *rest][:limit]


def mentions(prompt: str) -> list[str]:
    """The ``@path`` words of a prompt, once each, in order (an e-mail address is not a mention)."""
    return list(dict.fromkeys(match.group(1).rstrip(".,;:!?)") for match in _MENTION.finditer(prompt)))


@dataclass(frozen=True)
class Attachment:
    path: str
    attached: bool
    text: str
    """The file as ``read_file`` returned it, or why it was not attached."""


def read_call(path: str) -> ToolCall:
    """The ``read_file`` call that attaches ``path`` (a surface shows it like the model's own calls)."""
    return ToolCall(id=new_id("call"), name="read_file", arguments={"path": path})


NO_SUCH_FILE = "no such file in the workspace"


def refusal(workspace: Path, path: str) -> str | None:
    """Why ``path`` is not even read: it resolves outside the workspace, or names no file there."""
    root = os.path.realpath(workspace)
    resolved = os.path.realpath(os.path.join(root, path))
    if not (resolved == root or resolved.startswith(root.rstrip("/") + "/")):
        return "it is outside the workspace; only workspace files are attached"
    if not os.path.isfile(resolved):
        return NO_SUCH_FILE
    return None


async def attach(session: Session, call: ToolCall) -> Attachment:
    """Run ``call`` (from ``read_call``) through the session's pipeline, unless ``refusal`` refuses it."""
    path = str(call.arguments["path"])
    why = refusal(session.workspace, path)
    if why is not None:
        return Attachment(path, False, why)
    result = await session.perform(call)
    return Attachment(path, result.status == "ok", result.message.content)


def with_attachments(prompt: str, attachments: list[Attachment]) -> str:
    """The prompt followed by each attached file, marked so the model can tell them from the request."""
    parts = [prompt]
    for attachment in attachments:
        if attachment.attached:
            parts.append(f'<attached_file path="{attachment.path}">\n{attachment.text}\n</attached_file>')
    return "\n\n".join(parts)
