"""Benchmarks for the spine: each figure is printed beside a raw baseline measured in the same run.

- the shell tool's round trip (prepare, policy, approval, sandbox, audit) against raw ``bwrap … true``;
- a 100 KB edit commit against a raw write + fsync + rename;
- an audit append, unsigned and with its signed head checkpoint, against a raw write + fsync of the same bytes;
- ``seepient --version`` against ``python -c pass`` with the same interpreter.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._timing import report, sample, sample_async
from seepient.approval import ApprovalBroker
from seepient.audit.log import AuditLog
from seepient.audit.signing import CheckpointSigner
from seepient.config.settings import PermissionSettings
from seepient.execution.commit import commit_change
from seepient.execution.environment import scrubbed_environment
from seepient.execution.local import LocalExecutor
from seepient.execution.sandbox.bwrap import BwrapSandbox, protected_workspace_paths
from seepient.execution.sandbox.host_view import host_view
from seepient.policy.engine import PolicyEngine
from seepient.protocol import EditBlock, FileChange, ToolCall
from seepient.runtime.events import EventStream
from seepient.runtime.pipeline import PipelineDeps, ToolCallPipeline
from seepient.tools.registry import builtin_registry

BIN = Path(sys.executable).parent


def _shell_round_trip(root: Path, runs: int) -> str:
    workspace = root / "ws"
    workspace.mkdir()
    home = root / "seepient-home"
    events = EventStream("bench")
    executor = LocalExecutor(workspace, seepient_home=home)
    deps = PipelineDeps(
        registry=builtin_registry(),
        policy=PolicyEngine(
            workspace, seepient_home=home, mode="ask-untrusted", permissions=PermissionSettings()
        ),
        broker=ApprovalBroker(None, auto_approve=True),
        executor=executor,
        reads=executor.reads,
        audit=AuditLog(home / "audit.log"),
        events=events,
        workspace=workspace,
        session_id="bench",
        model_name="bench",
        surface="cli",
    )
    pipeline = ToolCallPipeline(deps)
    counter = iter(range(10**9))

    async def ours() -> None:
        result = await pipeline.run(
            ToolCall(id=f"c{next(counter)}", name="shell", arguments={"command": "true"}), "t"
        )
        assert result.status == "ok", result.message.content

    sandbox = BwrapSandbox()
    env = scrubbed_environment(os.environ, home=str(Path.home()))
    raw_argv = sandbox.command_argv(
        ["true"],
        workspace=workspace,
        cwd=workspace,
        network=False,
        view=host_view(home=Path.home(), seepient_home=home, environ=os.environ, workspace=workspace),
        read_only_inside=protected_workspace_paths(workspace),
        env=env,
    )

    def raw() -> None:
        subprocess.run(raw_argv, check=True)

    ours_s = asyncio.run(sample_async(ours, runs=runs))
    raw_s = sample(raw, runs=runs)
    line = report("shell tool round trip", ours_s, raw_s, "raw bwrap … true", "median within 10 ms of raw")
    return line


def _commit(root: Path, runs: int) -> str:
    workspace = root / "commit"
    workspace.mkdir()
    body = "".join(f"line {i:06d} of a hundred kilobyte file\n" for i in range(2700))
    target = workspace / "big.txt"
    target.write_text(body)
    raw_target = workspace / "raw.txt"
    # The file alternates between two states, so both changes are prepared once, outside the timing:
    # the figure is the commit alone (pre-image check, exact edit, temp file, fsync, rename, dir fsync).
    flipped = body.replace("line 001000", "LINE 001000", 1)
    changes = [
        FileChange(
            path="big.txt",
            pre_image_sha256=hashlib.sha256(before.encode()).hexdigest(),
            edits=(EditBlock(search=old, replace=new),),
        )
        for before, old, new in (
            (body, "line 001000", "LINE 001000"),
            (flipped, "LINE 001000", "line 001000"),
        )
    ]
    turn = iter(range(10**9))

    def ours() -> None:
        outcome = commit_change(workspace, changes[next(turn) % 2])
        assert outcome.ok, outcome

    data = body.encode()

    def raw() -> None:
        tmp = workspace / ".raw.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, raw_target)

    def raw_durable() -> None:
        raw()
        dir_fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    ours_s = sample(ours, runs=runs)
    raw_s = sample(raw, runs=runs)
    durable_s = sample(raw_durable, runs=runs)
    # The commit also fsyncs the directory, without which the rename itself is not durable; the second
    # line compares against a raw write that pays for the same guarantee.
    return "\n".join(
        [
            report("100 KB edit commit", ours_s, raw_s, "raw write+fsync+rename", "within 1.5× of raw"),
            report("100 KB edit commit", ours_s, durable_s, "raw … + directory fsync", "(same durability)"),
        ]
    )


def _audit(root: Path, runs: int, *, signed: bool = False) -> str:
    # A session's log signs every head checkpoint (the signature is made while the record's fsync sleeps).
    signer = CheckpointSigner(root / "keys" / "audit-signing.key") if signed else None
    log = AuditLog(root / ("audit-signed" if signed else "audit") / "audit.log", signer=signer)
    record = {
        "type": "bench",
        "surface": "cli",
        "session_id": "bench",
        "action": {"tool": "shell", "command": "true", "digest": "0" * 64},
        "outcome": {"status": "ok"},
    }
    line = (json.dumps({"seq": 1, "prev": "0" * 64, **record, "hash": "0" * 64}) + "\n").encode()
    raw_path = root / "audit-raw.log"
    log.append(record)  # the first append makes the files (and the key)

    def ours() -> None:
        log.append(record)

    def raw() -> None:
        fd = os.open(raw_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    ours_s = sample(ours, runs=runs)
    raw_s = sample(raw, runs=runs)
    name = "audit append, signed" if signed else "audit append"
    return report(name, ours_s, raw_s, "raw write+fsync", "within 1.5× of raw")


def _version(runs: int) -> str:
    seepient = str(BIN / "seepient")
    ours_s = sample(
        lambda: subprocess.run([seepient, "--version"], check=True, capture_output=True), runs=runs
    )
    raw_s = sample(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), runs=runs)
    return report("seepient --version", ours_s, raw_s, "python -c pass", "under 4× bare Python")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=60, help="samples per figure (default 60)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="seepient-bench-") as tmp:
        root = Path(tmp)
        os.environ["SEEPIENT_HOME"] = str(root / "seepient-home")
        lines = [
            _shell_round_trip(root, args.runs),
            _commit(root, args.runs),
            _audit(root, args.runs * 2),
            _audit(root, args.runs * 2, signed=True),
            _version(max(10, args.runs // 3)),
        ]
    print(f"Seepient spine benchmarks ({args.runs} runs each; medians; ratio = ours / raw baseline)")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
