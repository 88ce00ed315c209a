"""Pure data shared by every layer: messages, stream events, prepared actions, verdicts, approvals, runtime events.

No I/O happens here and nothing else from seepient is imported.
"""

from seepient.protocol.actions import (
    ActionKind,
    ActionPayload,
    Capability,
    EditBlock,
    FetchRequest,
    FileChange,
    PreparedActionDraft,
    ReadAction,
    Redirection,
    ShellCommand,
    SimpleCommand,
    canonical_json,
    new_id,
    payload_digest,
)
from seepient.protocol.approval import ApprovalDecision, ApprovalRequest, ApprovalResponse
from seepient.protocol.events import (
    ErrorEvent,
    PermissionRequest,
    PermissionResolved,
    RuntimeEvent,
    TextDelta,
    ToolCallEvent,
    ToolResult,
    TurnCompleted,
    TurnStarted,
)
from seepient.protocol.executor import (
    ActionExecutor,
    CommitOutcome,
    GrepOutcome,
    SandboxUnavailable,
    ShellOutcome,
)
from seepient.protocol.messages import Message, ModelRequest, ToolCall, ToolSpec, Usage
from seepient.protocol.paths import PathAccess, PathDenied, ResolvedPath
from seepient.protocol.stream import Completion, ModelStreamEvent, TextChunk, ToolCallChunk
from seepient.protocol.verdict import Decision, Verdict

__all__ = [
    "ActionExecutor",
    "ActionKind",
    "ActionPayload",
    "ApprovalDecision",
    "ApprovalRequest",
    "ApprovalResponse",
    "Capability",
    "CommitOutcome",
    "Completion",
    "Decision",
    "EditBlock",
    "ErrorEvent",
    "FetchRequest",
    "FileChange",
    "GrepOutcome",
    "Message",
    "ModelRequest",
    "ModelStreamEvent",
    "PathAccess",
    "PathDenied",
    "PermissionRequest",
    "PermissionResolved",
    "PreparedActionDraft",
    "ReadAction",
    "Redirection",
    "ResolvedPath",
    "RuntimeEvent",
    "SandboxUnavailable",
    "ShellCommand",
    "ShellOutcome",
    "SimpleCommand",
    "TextChunk",
    "TextDelta",
    "ToolCall",
    "ToolCallChunk",
    "ToolCallEvent",
    "ToolResult",
    "ToolSpec",
    "TurnCompleted",
    "TurnStarted",
    "Usage",
    "Verdict",
    "canonical_json",
    "new_id",
    "payload_digest",
]
