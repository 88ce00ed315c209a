"""The worker entrypoint that runs inside a dispatch container: reads one task, runs it, prints one JSON result.

Only the standard library (and the capped output buffer, which needs nothing more) is imported for a
shell task (a Python start is part of every dispatch's latency); a file commit loads the exact commit
helper. The container is the jail, so no second sandbox (bubblewrap) runs inside it: it would need new
namespaces, which the dropped capabilities and the engine's default seccomp profile rightly deny to the
container.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from seepient.execution.capped_output import CappedOutput

DEFAULT_TASK_PATH = "/run/seepient/task"
"""Where the scheduler puts the task: a regular file for a fresh container, a FIFO for a pooled one."""

_CHUNK = 64 * 1024
_DEFAULT_SHELL = "/bin/bash"


def _drain(stream: Any, sink: CappedOutput) -> None:
    while chunk := stream.read(_CHUNK):
        sink.feed(chunk)


def run_shell(task: dict[str, Any]) -> dict[str, Any]:
    """Run ``task["command"]`` with bash in ``task["cwd"]``, killed with its whole group at the deadline."""
    cap = int(task["output_bytes"])
    timeout_s = int(task["timeout_ms"]) / 1000
    shell = _DEFAULT_SHELL if os.path.exists(_DEFAULT_SHELL) else "/bin/sh"
    started = time.monotonic()
    try:
        child = subprocess.Popen(
            [shell, "-c", task["command"]],
            cwd=task["cwd"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return _result(127, "", f"cannot start {shell} in {task['cwd']}: {exc.strerror or exc}", started)
    out, err = CappedOutput(cap), CappedOutput(cap)
    readers = [
        threading.Thread(target=_drain, args=(stream, sink), daemon=True)
        for sink, stream in ((out, child.stdout), (err, child.stderr))
    ]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        exit_code: int | None = child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        exit_code = None
    # The whole group goes either way, so nothing the command left running outlives the result.
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if timed_out:
        child.wait()
    for reader in readers:
        reader.join(timeout=0.5)
    result = _result(exit_code, out.text(), err.text(), started)
    result["timed_out"] = timed_out
    result["output_truncated"] = out.truncated or err.truncated
    return result


def run_commit(task: dict[str, Any]) -> dict[str, Any]:
    """Apply one ``FileChange`` through the exact commit helper; its ``CommitOutcome`` is the stdout."""
    from pathlib import Path

    from seepient.execution.commit import commit_change
    from seepient.protocol.actions import FileChange

    started = time.monotonic()
    change = FileChange.model_validate(task["change"])
    outcome = commit_change(Path(task["workspace"]), change)
    return _result(0 if outcome.ok else 1, outcome.model_dump_json(), "", started)


def _result(exit_code: int | None, stdout: str, stderr: str, started: float) -> dict[str, Any]:
    return {
        "exit_code": exit_code,
        "stdout": stdout,
        "stderr": stderr,
        "timed_out": False,
        "output_truncated": False,
        "duration_ms": int((time.monotonic() - started) * 1000),
    }


def _not_dumpable() -> None:
    # Model-authored code runs under the same uid as this process; a non-dumpable process cannot have its
    # memory or its /proc/1/fd/1 opened by it, so the command cannot write a result in the worker's name.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Read the task (a path argument, or stdin for ``-``), run it, print one JSON line. Exit 0 when a
    result was printed, 2 for a task that cannot be read."""
    args = sys.argv[1:] if argv is None else argv
    path = args[0] if args else DEFAULT_TASK_PATH
    _not_dumpable()
    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as handle:  # blocks on a FIFO until the scheduler writes the task
                raw = handle.read()
        task = json.loads(raw)
        operation = task["op"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        sys.stderr.write(f"seepient worker: cannot read the task from {path}: {exc}\n")
        return 2
    if operation == "shell":
        result = run_shell(task)
    elif operation == "commit":
        result = run_commit(task)
    else:
        sys.stderr.write(f"seepient worker: unknown operation {operation!r}\n")
        return 2
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
