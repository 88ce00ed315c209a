"""The in-container worker entrypoint, run here as a plain process: the task formats, the deadline that kills
the whole process group, the output cap, and bad tasks."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from seepient.scheduler import worker
from tests.conftest import BIN


def _task(tmp_path: Path, **fields) -> Path:
    path = tmp_path / "task"
    path.write_text(json.dumps(fields))
    return path


def test_a_shell_task_reports_exit_code_and_both_streams(tmp_path: Path) -> None:
    result = worker.run_shell(
        {
            "command": "echo out; echo err >&2; exit 3",
            "cwd": str(tmp_path),
            "timeout_ms": 5000,
            "output_bytes": 1000,
        }
    )
    assert (result["exit_code"], result["stdout"], result["stderr"]) == (3, "out\n", "err\n")
    assert not result["timed_out"] and not result["output_truncated"]


def test_the_deadline_kills_the_whole_group(tmp_path: Path) -> None:
    marker = tmp_path / "survivor"
    started = time.monotonic()
    result = worker.run_shell(
        {
            "command": f"(sleep 2; touch {marker}) & echo started; sleep 30",
            "cwd": str(tmp_path),
            "timeout_ms": 300,
            "output_bytes": 1000,
        }
    )
    assert time.monotonic() - started < 5
    assert result["timed_out"] and result["exit_code"] is None and result["stdout"] == "started\n"
    time.sleep(2.5)
    assert not marker.exists(), "a background child outlived the deadline"


def test_output_beyond_the_cap_is_cut_and_flagged(tmp_path: Path) -> None:
    result = worker.run_shell(
        {
            "command": "head -c 100000 /dev/zero | tr '\\0' y",
            "cwd": str(tmp_path),
            "timeout_ms": 5000,
            "output_bytes": 777,
        }
    )
    assert result["stdout"] == "y" * 777 and result["output_truncated"]


def test_a_missing_working_directory_is_a_result_not_a_crash(tmp_path: Path) -> None:
    result = worker.run_shell(
        {"command": "true", "cwd": str(tmp_path / "gone"), "timeout_ms": 5000, "output_bytes": 1000}
    )
    assert result["exit_code"] == 127 and "cannot start" in result["stderr"]


def test_a_commit_task_uses_the_commit_helper(tmp_path: Path) -> None:
    result = worker.run_commit(
        {
            "workspace": str(tmp_path),
            "change": {"path": "a.txt", "pre_image_sha256": None, "new_content": "hi\n"},
        }
    )
    assert result["exit_code"] == 0 and json.loads(result["stdout"])["code"] == "OK"
    assert (tmp_path / "a.txt").read_text() == "hi\n"


def test_the_entrypoint_prints_one_json_line_and_imports_nothing_heavy_for_shell(tmp_path: Path) -> None:
    task = _task(
        tmp_path, op="shell", command="echo hi", cwd=str(tmp_path), timeout_ms=5000, output_bytes=100
    )
    code = (
        "import sys, runpy; sys.argv = ['worker', sys.argv[1]];\n"
        "try:\n    runpy.run_module('seepient.scheduler.worker', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    heavy = [m for m in sys.modules if m.split('.')[0] in ('pydantic', 'cryptography', 'aiohttp', 'aiodocker')]\n"
        "    sys.stderr.write(repr(heavy)); raise\n"
    )
    done = subprocess.run(
        [str(BIN / "python"), "-c", code, str(task)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert json.loads(line)["stdout"] == "hi\n"
    assert done.stderr == "[]"


def test_an_unreadable_or_unknown_task_exits_2(tmp_path: Path, capsys) -> None:
    assert worker.main([str(tmp_path / "missing")]) == 2
    assert worker.main([str(_task(tmp_path, op="format_disk"))]) == 2
    (tmp_path / "bad").write_text("{not json")
    assert worker.main([str(tmp_path / "bad")]) == 2
    assert "cannot read the task" in capsys.readouterr().err
    assert sys.modules["seepient.scheduler.worker"] is worker
