"""Intents and outcomes: one intent and at most one outcome per action, bound by id and digest, and the
intents whose process died named as interrupted (by ``verify`` and by the next start, once)."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import socket
from pathlib import Path

import pytest

from seepient.audit import AuditLog, AuditOutcome, format_report, verify_log
from seepient.audit.liveness import current_writer
from seepient.audit.record import FileImages, IntentRecord, OutcomeRecord, Writer
from seepient.audit.recovery import cache_path_for, file_states, scan_open_intents
from seepient.protocol import FileChange, FileChangeSet, PreparedActionDraft, Verdict

_FORK = multiprocessing.get_context("fork")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _dead_writer() -> Writer:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    live = current_writer()
    return Writer(host=socket.gethostname(), pid=pid, boot_id=live.boot_id, started=None)


def _intent(workspace: Path, index: int, *, writer: Writer | None = None, files=None) -> IntentRecord:
    changes = files or (
        FileChange(path=f"f{index}.txt", pre_image_sha256=None, new_content=f"new {index}\n"),
    )
    payload = changes[0] if len(changes) == 1 else FileChangeSet(changes=changes)
    action = PreparedActionDraft(
        session_id="ses_a",
        call_id=f"call_{index}",
        tool="write_file" if len(changes) == 1 else "apply_patch",
        kind="file_change",
        payload=payload,
        read_only=False,
        summary=f"write {index}",
    )
    images = tuple(
        FileImages(
            path=c.path,
            pre_image_sha256=c.pre_image_sha256,
            post_image_sha256=None if c.delete else _sha(c.new_content or ""),
            delete=c.delete,
        )
        for c in changes
    )
    return IntentRecord(
        surface="cli",
        session_id="ses_a",
        model="replay:x",
        action=action,
        verdict=Verdict.allow("test"),
        workspace=str(workspace),
        writer=writer or current_writer(),
        files=images,
    )


def _ok(intent: IntentRecord) -> OutcomeRecord:
    return OutcomeRecord.for_intent(intent, AuditOutcome(status="ok"))


def _bad(path: Path, *fragments: str) -> None:
    report = verify_log(path)
    assert not report.ok, format_report(report)
    for fragment in fragments:
        assert fragment in (report.problem or ""), report.problem


def test_paired_intents_and_outcomes_verify(log_path, tmp_path):
    log = AuditLog(log_path)
    for index in range(3):
        intent = _intent(tmp_path, index)
        log.append(intent)
        log.append(_ok(intent))
    report = verify_log(log_path)
    assert report.ok and report.records == 6 and report.interrupted == ()


def test_an_outcome_without_an_intent_fails(log_path, tmp_path):
    log = AuditLog(log_path)
    log.append(_ok(_intent(tmp_path, 1)))
    _bad(log_path, "no intent before it")


def test_an_outcome_before_its_intent_fails(log_path, tmp_path):
    log = AuditLog(log_path)
    intent = _intent(tmp_path, 1)
    log.append(_ok(intent))
    log.append(intent)
    _bad(log_path, "no intent before it")


def test_two_outcomes_for_one_action_fail(log_path, tmp_path):
    log = AuditLog(log_path)
    intent = _intent(tmp_path, 1)
    log.append(intent)
    log.append(_ok(intent))
    log.append(OutcomeRecord.for_intent(intent, AuditOutcome(status="error", detail="second thoughts")))
    _bad(log_path, "second outcome")


def test_two_intents_for_one_action_fail(log_path, tmp_path):
    log = AuditLog(log_path)
    intent = _intent(tmp_path, 1)
    log.append(intent)
    log.append(intent.model_copy(update={"model": "other"}))
    _bad(log_path, "second intent")


def test_an_outcome_for_another_digest_fails(log_path, tmp_path):
    log = AuditLog(log_path)
    intent = _intent(tmp_path, 1)
    log.append(intent)
    log.append(_ok(intent).model_copy(update={"digest": "f" * 64}))
    _bad(log_path, "another digest")


def test_a_single_record_for_an_action_that_has_an_intent_fails(log_path, tmp_path, record_factory):
    log = AuditLog(log_path)
    intent = _intent(tmp_path, 1)
    log.append(intent)
    log.append(_ok(intent))
    single = record_factory(1)
    log.append(single.model_copy(update={"action": intent.action}))
    _bad(log_path, "second time")


def test_an_intent_whose_process_died_is_named_with_what_its_files_hold(log_path, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "kept.txt").write_text("old\n")
    (workspace / "edited.txt").write_text("old\n")
    (workspace / "gone.txt").write_text("old\n")
    changes = (
        FileChange(path="made.txt", pre_image_sha256=None, new_content="made\n"),
        FileChange(path="kept.txt", pre_image_sha256=_sha("old\n"), new_content="new\n"),
        FileChange(path="edited.txt", pre_image_sha256=_sha("old\n"), new_content="new\n"),
        FileChange(path="gone.txt", pre_image_sha256=_sha("old\n"), delete=True),
    )
    log = AuditLog(log_path)
    intent = _intent(workspace, 1, writer=_dead_writer(), files=changes)
    log.append(intent)
    # The process got as far as creating made.txt and deleting gone.txt; someone else then edited edited.txt.
    (workspace / "made.txt").write_text("made\n")
    (workspace / "gone.txt").unlink()
    (workspace / "edited.txt").write_text("by hand\n")
    report = verify_log(log_path)
    assert report.ok, report.problem  # interrupted is not tampering: exit 0
    (action,) = report.interrupted
    assert (action.state, action.seq, action.tool, action.session_id) == ("open", 1, "apply_patch", "ses_a")
    assert {state.path: state.state for state in action.files} == {
        "made.txt": "new",
        "kept.txt": "old",
        "edited.txt": "neither",
        "gone.txt": "new",
    }
    text = format_report(report)
    assert "INTERRUPTED (no outcome recorded): seq 1 apply_patch in session ses_a" in text
    assert "made.txt: new content" in text and "kept.txt: old content" in text


def test_a_live_processs_intent_is_in_progress_not_interrupted(log_path, tmp_path):
    log = AuditLog(log_path)
    log.append(_intent(tmp_path, 1))
    (action,) = verify_log(log_path).interrupted
    assert action.state == "running"
    assert "in progress" in format_report(verify_log(log_path))


def test_a_symlink_where_a_file_should_be_holds_neither_content(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "elsewhere").write_text("new 1\n")
    (workspace / "f1.txt").symlink_to(tmp_path / "elsewhere")
    (state,) = file_states(_intent(workspace, 1))
    assert state.state == "neither"


def test_close_interrupted_closes_only_dead_writers_intents_and_only_once(log_path, tmp_path):
    log = AuditLog(log_path)
    dead, live = _intent(tmp_path, 1, writer=_dead_writer()), _intent(tmp_path, 2)
    log.append(dead)
    log.append(live)
    closed = log.close_interrupted(
        lambda intent: OutcomeRecord.for_intent(
            intent.record, AuditOutcome(status="interrupted"), recovered_by="ses_next"
        )
    )
    assert [intent.record.action.id for intent, _ in closed] == [dead.action.id]
    assert log.close_interrupted(lambda intent: pytest.fail("closed twice")) == []
    report = verify_log(log_path)
    assert report.ok
    assert [(a.action_id, a.state, a.closed_by) for a in report.interrupted] == [
        (dead.action.id, "closed", "ses_next"),
        (live.action.id, "running", None),
    ]


def _close_in_child(path: Path, barrier, out) -> None:
    log = AuditLog(path)
    barrier.wait()
    closed = log.close_interrupted(
        lambda intent: OutcomeRecord.for_intent(
            intent.record, AuditOutcome(status="interrupted"), recovered_by=f"ses_{os.getpid()}"
        )
    )
    out.put(len(closed))


def test_sessions_starting_at_once_close_each_interrupted_action_once(log_path, tmp_path):
    log = AuditLog(log_path)
    writer = _dead_writer()
    for index in range(5):
        log.append(_intent(tmp_path, index, writer=writer))
    log.close()
    barrier, out = _FORK.Barrier(4), _FORK.Queue()
    starters = [_FORK.Process(target=_close_in_child, args=(log_path, barrier, out)) for _ in range(4)]
    for starter in starters:
        starter.start()
    for starter in starters:
        starter.join(60)
        assert starter.exitcode == 0
    assert sum(out.get(timeout=5) for _ in starters) == 5
    report = verify_log(log_path)
    assert report.ok, report.problem  # a second outcome would fail here
    assert [a.state for a in report.interrupted] == ["closed"] * 5


def test_the_scan_resumes_where_it_stopped_and_survives_a_replaced_log(log_path, tmp_path):
    log = AuditLog(log_path)
    first = _intent(tmp_path, 1, writer=_dead_writer())
    log.append(first)
    scan = scan_open_intents(log_path)
    assert [i.record.action.id for i in scan.open] == [first.action.id]
    scan.remember(log_path, scan.open)
    log.append(_ok(first))
    second = _intent(tmp_path, 2)
    log.append(second)
    assert [i.record.action.id for i in scan_open_intents(log_path).open] == [second.action.id]
    # A cache that names lines another log does not hold is ignored, never trusted.
    cache = json.loads(cache_path_for(log_path).read_text())
    cache["hash"] = "0" * 64
    cache_path_for(log_path).write_text(json.dumps(cache))
    assert [i.record.action.id for i in scan_open_intents(log_path).open] == [second.action.id]


def test_the_next_start_seals_a_record_cut_off_mid_write(signed_log):
    log = signed_log(3)
    torn = log.lines()[1][:150]
    with log.path.open("ab") as stream:
        stream.write(torn)  # a writer killed in the middle of writing an intent
    assert not log.verify().ok
    writer = log.writer()
    assert writer.close_interrupted(lambda intent: None) == []
    report = log.verify()
    assert report.ok and report.signature == "valid", report.problem
    assert any("seals 151 bytes" in note for note in report.warnings), report.warnings  # with its newline
