"""``FileChange.delete`` and ``FileChangeSet``: additive to the wire format, so earlier digests still hold."""

from __future__ import annotations

import hashlib

import pytest
import rfc8785
from pydantic import ValidationError

from seepient.protocol import FileChange, FileChangeSet, PreparedActionDraft


def test_a_change_that_keeps_its_file_has_the_digest_it_had_before_delete_existed() -> None:
    change = FileChange(path="a.py", pre_image_sha256=None, new_content="x\n", diff="+x\n")
    as_before = {
        "type": "file_change",
        "path": "a.py",
        "pre_image_sha256": None,
        "edits": None,
        "new_content": "x\n",
        "diff": "+x\n",
    }
    assert change.model_dump(mode="json") == as_before
    draft = PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="write_file",
        kind="file_change",
        payload=change,
        read_only=False,
        summary="w",
    )
    assert draft.digest == hashlib.sha256(rfc8785.dumps(as_before)).hexdigest()


def test_a_deletion_round_trips_and_binds_its_digest() -> None:
    gone = FileChange(path="old.py", pre_image_sha256="ab" * 32, delete=True)
    assert gone.model_dump(mode="json")["delete"] is True
    draft = PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="apply_patch",
        kind="file_change",
        payload=FileChangeSet(
            changes=(gone, FileChange(path="new.py", pre_image_sha256=None, new_content=""))
        ),
        read_only=False,
        summary="move",
    )
    again = PreparedActionDraft.model_validate_json(draft.model_dump_json())
    assert again == draft and again.digest == draft.digest
    tampered = draft.model_dump(mode="json")
    tampered["payload"]["changes"][0]["delete"] = False
    tampered["payload"]["changes"][0]["new_content"] = ""
    with pytest.raises(ValidationError, match="digest does not match"):
        PreparedActionDraft.model_validate(tampered)


@pytest.mark.parametrize(
    "fields",
    [
        {"pre_image_sha256": None, "delete": True},
        {"pre_image_sha256": "ab", "delete": True, "new_content": "x"},
    ],
)
def test_a_deletion_needs_a_pre_image_and_no_content(fields: dict) -> None:
    with pytest.raises(ValidationError, match="deletes"):
        FileChange(path="a", **fields)


def test_a_set_is_not_empty_and_names_each_path_once() -> None:
    with pytest.raises(ValidationError):
        FileChangeSet(changes=())
    one = FileChange(path="a", pre_image_sha256=None, new_content="")
    with pytest.raises(ValidationError, match="at most once"):
        FileChangeSet(changes=(one, one))
