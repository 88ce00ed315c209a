"""ACP prompt blocks as a turn's text and images; runtime events as session updates; permission options and
the answers they stand for."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from seepient.protocol import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalScope,
    FileChange,
    PermissionRequest,
    PreparedActionDraft,
    ShellCommand,
    TodoItem,
    TodoUpdated,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    Verdict,
)
from seepient.surfaces.acp.content import PromptError, prompt_parts
from seepient.surfaces.acp.permission import answer_for, permission_options
from seepient.surfaces.acp.updates import UpdateTranslator, action_content

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


def test_text_links_embedded_text_and_images_make_one_prompt():
    text, images = prompt_parts(
        [
            TextContentBlock(type="text", text="Fix this:"),
            ResourceContentBlock(type="resource_link", uri="file:///w/calc.py", name="calc.py"),
            EmbeddedResourceContentBlock(
                type="resource",
                resource=TextResourceContents(uri="file:///w/notes.md", text="use addition"),
            ),
            ImageContentBlock(type="image", data=PNG, mime_type="image/png"),
            EmbeddedResourceContentBlock(
                type="resource",
                resource=BlobResourceContents(uri="file:///w/x.png", blob=PNG, mime_type="image/png"),
            ),
        ]
    )
    assert text.startswith("Fix this:") and "[calc.py](file:///w/calc.py)" in text
    assert '<context uri="file:///w/notes.md">\nuse addition\n</context>' in text
    assert [image.media_type for image in images] == ["image/png", "image/png"]


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        ([], "the prompt is empty"),
        ([ImageContentBlock(type="image", data="not base64!", mime_type="image/png")], "not base64"),
        (
            [
                ImageContentBlock(
                    type="image", data=base64.b64encode(b"plain text").decode(), mime_type="image/png"
                )
            ],
            "prompt block 1",
        ),
        ([AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav")], "audio"),
    ],
)
def test_prompts_the_agent_cannot_take_say_why(blocks, message):
    with pytest.raises(PromptError, match=message):
        prompt_parts(blocks)


def _draft(payload, tool: str = "edit_file", kind: str = "file_change") -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s",
        call_id="call_1",
        tool=tool,
        kind=kind,
        payload=payload,
        read_only=False,
        summary="Edit calc.py",
    )


DIFF = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
)


def test_a_file_change_shows_a_diff_per_hunk_with_its_absolute_path():
    change = FileChange(path="calc.py", pre_image_sha256="0" * 64, new_content="x", diff=DIFF)
    content = action_content(Path("/w"), _draft(change), ("edits ask",))
    assert content[0].type == "diff" and content[0].path == "/w/calc.py"
    assert content[0].old_text == "def add(a, b):\n    return a - b\n"
    assert content[0].new_text == "def add(a, b):\n    return a + b\n"
    assert content[-1].content.text == "why asked: edits ask"
    created = action_content(
        Path("/w"), _draft(FileChange(path="n.py", pre_image_sha256=None, new_content="new\n"))
    )
    assert (created[0].old_text, created[0].new_text) == (None, "new\n")


def test_events_become_tool_calls_updates_and_a_plan():
    translator = UpdateTranslator(Path("/w"))
    call = ToolCall(id="call_1", name="read_file", arguments={"path": "calc.py"})
    (start,) = translator.updates(ToolCallEvent(session_id="s", seq=1, turn_id="t", call=call))
    assert (start.session_update, start.kind, start.status) == ("tool_call", "read", "pending")
    assert start.locations[0].path == "/w/calc.py" and start.title == "read_file: calc.py"
    shell = _draft(ShellCommand(command="make test", cwd="/w"), tool="shell", kind="shell")
    request = ApprovalRequest(session_id="s", action=shell, verdict=Verdict.ask("mode:x", "asks"))
    (asked,) = translator.updates(PermissionRequest(session_id="s", seq=2, turn_id="t", request=request))
    assert asked.kind == "execute" and asked.content[0].content.text == "$ make test\nin /w"
    (failed,) = translator.updates(
        ToolResult(
            session_id="s",
            seq=3,
            turn_id="t",
            call_id="call_1",
            tool="read_file",
            status="denied",
            output="Denied: no",
        )
    )
    assert failed.status == "failed" and failed.content[0].content.text == "Denied: no"
    items = (TodoItem(id="1", content="write tests", status="in_progress"),)
    (plan,) = translator.updates(TodoUpdated(session_id="s", seq=4, items=items))
    assert plan.session_update == "plan" and plan.entries[0].status == "in_progress"


def test_options_map_onto_scopes_and_a_cancelled_or_unknown_answer_rejects():
    shell = _draft(ShellCommand(command="git status", cwd="/w"), tool="shell", kind="shell")
    prefix = ApprovalScope(kind="prefix", value="git status:*", label="commands starting with `git status`")
    exact = ApprovalScope(kind="exact", value=shell.digest, label="this exact action")
    request = ApprovalRequest(
        session_id="s", action=shell, verdict=Verdict.ask("mode:x", "asks"), scopes=(exact, prefix)
    )
    options = permission_options(request)
    assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert "git status" in options[1].name and "git status" in options[3].name
    assert answer_for(request, "allow_always").decision is ApprovalDecision.APPROVE_SESSION
    assert answer_for(request, "allow_always").scope == "prefix"
    refused = answer_for(request, "reject_always")
    assert refused.decision is ApprovalDecision.REJECT_SESSION and refused.scope == "prefix"
    for option in (None, "allow_everything"):
        assert answer_for(request, option).decision is ApprovalDecision.REJECT
    assert all(answer_for(request, o.option_id).digest == shell.digest for o in options)
    once_only = request.model_copy(update={"scopes": ()})
    assert [o.kind for o in permission_options(once_only)] == ["allow_once", "reject_once", "reject_always"]
    # An "always" answer to an ask that offers no scope is not taken as a grant.
    assert answer_for(once_only, "allow_always").decision is ApprovalDecision.REJECT
