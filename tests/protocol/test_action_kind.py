"""A payload's type decides its action kind: every payload type has one, and memory splits view from writes."""

from __future__ import annotations

import typing

import pytest

from seepient.protocol import ActionKind, action_kind
from seepient.protocol.actions import ActionPayload, FileChange, FileChangeSet, MemoryAction

_EXPECTED = {
    "ReadAction": ActionKind.READ,
    "KnowledgeQuery": ActionKind.READ,
    "FileChange": ActionKind.FILE_CHANGE,
    "FileChangeSet": ActionKind.FILE_CHANGE,
    "ShellCommand": ActionKind.SHELL,
    "FetchRequest": ActionKind.FETCH,
    "WebSearchRequest": ActionKind.FETCH,
    "ProcessControl": ActionKind.PROCESS,
    "WorktreeCommand": ActionKind.WORKTREE,
    "AgentTask": ActionKind.AGENT,
    "McpCall": ActionKind.MCP,
    "McpServerStart": ActionKind.MCP,
    "SessionStateChange": ActionKind.STATE,
}


def _sample(cls: type) -> object:
    # The file changes check their content even unvalidated; the rest need no fields to be matched on.
    change = FileChange(path="a.txt", pre_image_sha256=None, new_content="a\n")
    if cls is FileChange:
        return change
    if cls is FileChangeSet:
        return FileChangeSet(changes=(change,))
    return cls.model_construct()  # type: ignore[attr-defined]


def _payload_types() -> list[type]:
    union = typing.get_args(ActionPayload)[0]
    return list(typing.get_args(union))


def test_every_payload_type_is_listed() -> None:
    names = {cls.__name__ for cls in _payload_types()}
    assert names == set(_EXPECTED) | {"MemoryAction"}


@pytest.mark.parametrize(
    "cls", [c for c in _payload_types() if c is not MemoryAction], ids=lambda c: c.__name__
)
def test_kind_of_each_payload_type(cls: type) -> None:
    assert action_kind(_sample(cls)) == _EXPECTED[cls.__name__]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("command", "kind"),
    [("view", ActionKind.READ), ("create", ActionKind.FILE_CHANGE), ("delete", ActionKind.FILE_CHANGE)],
)
def test_memory_view_reads_and_the_rest_change_files(command: str, kind: ActionKind) -> None:
    payload = MemoryAction(command=command, scope="user", path="notes.md")  # type: ignore[arg-type]
    assert action_kind(payload) == kind


def test_a_value_that_is_no_payload_is_refused() -> None:
    with pytest.raises(AssertionError):
        action_kind("rm -rf /")  # type: ignore[arg-type]
