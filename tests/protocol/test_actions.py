"""Prepared actions: the digest binds the payload, survives a round trip and rejects tampering."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from seepient.protocol import (
    EditBlock,
    FileChange,
    Message,
    PreparedActionDraft,
    ShellCommand,
    canonical_json,
    payload_digest,
)


def _draft(payload) -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="t",
        kind=payload.type,
        payload=payload,
        read_only=False,
        summary="x",
    )


def test_digest_is_sha256_of_rfc8785_payload():
    change = FileChange(path="a.py", pre_image_sha256=None, new_content="é\n")
    import hashlib

    expected = hashlib.sha256(canonical_json(change.model_dump(mode="json"))).hexdigest()
    assert _draft(change).digest == expected == payload_digest(change)
    # RFC 8785: keys sorted, no whitespace, UTF-8 kept as is
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()


def test_any_payload_change_changes_the_digest():
    a = _draft(ShellCommand(command="ls", cwd="/w"))
    assert a.digest != _draft(ShellCommand(command="ls ", cwd="/w")).digest
    assert a.digest != _draft(ShellCommand(command="ls", cwd="/w", timeout_ms=1)).digest
    assert a.digest == _draft(ShellCommand(command="ls", cwd="/w")).digest


def test_round_trip_keeps_digest_and_rejects_a_tampered_payload():
    draft = _draft(
        FileChange(path="a", pre_image_sha256="0" * 64, edits=(EditBlock(search="x", replace="y"),))
    )
    again = PreparedActionDraft.model_validate_json(draft.model_dump_json())
    assert again == draft and again.digest == draft.digest
    data = json.loads(draft.model_dump_json())
    data["payload"]["edits"][0]["replace"] = "rm -rf /"
    with pytest.raises(ValidationError, match="digest"):
        PreparedActionDraft.model_validate(data)


def test_file_change_needs_exactly_one_of_edits_and_content():
    with pytest.raises(ValidationError):
        FileChange(path="a", pre_image_sha256=None)
    with pytest.raises(ValidationError):
        FileChange(path="a", pre_image_sha256=None, new_content="", edits=())


def test_drafts_are_frozen():
    draft = _draft(ShellCommand(command="ls", cwd="/w"))
    with pytest.raises(ValidationError):
        draft.summary = "other"  # type: ignore[misc]


def test_message_helpers():
    assert Message.user("hi").role == "user"
    assert Message.system("s").content == "s"


def test_a_remembered_digest_belongs_to_its_payload_object():
    from seepient.protocol.actions import McpCall, ReadAction

    shell = ShellCommand(command="echo a", cwd=".")
    draft = _draft(shell)
    assert draft.digest == draft.digest == payload_digest(shell)
    # Another payload (a copy made with one) gets its own digest; an equal draft stays equal.
    other = draft.model_copy(update={"payload": ShellCommand(command="echo b", cwd=".")})
    assert other.digest == payload_digest(other.payload) != draft.digest
    assert PreparedActionDraft.model_validate(draft.model_dump(mode="json")) == draft
    # A dict inside a frozen payload can change in place: those digests are made afresh every time.
    for payload in (
        ReadAction(operation="glob", paths=("/w",), params={"pattern": "*"}),
        McpCall(server="s", tool="t", arguments={"a": 1}),
    ):
        read = _draft(payload)
        before = read.digest
        (payload.params if isinstance(payload, ReadAction) else payload.arguments)["changed"] = True
        assert read.digest == payload_digest(payload) != before
