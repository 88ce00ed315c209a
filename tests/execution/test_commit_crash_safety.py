"""Crash safety of the real ``seepient-fs-commit`` process: SIGKILL it at random moments, many times, and
after every kill the file is byte for byte the old content or the new one, never anything in between."""

from __future__ import annotations

import hashlib
import json
import os
import random
import secrets
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from seepient.protocol import CommitOutcome
from tests.execution.test_commit_cli import commit_script

KILLS_PER_WORKER = 52
WORKERS = 2
# A stuck helper is killed after this long anyway; it bounds the test, it is not a timing assertion.
RUN_CEILING_S = 20.0


@dataclass
class Tally:
    kills: int = 0
    old_after_kill: int = 0
    new_after_kill: int = 0
    killed_mid_commit: int = 0
    violations: list[str] = field(default_factory=list)


def _content(tag: str) -> str:
    # About 4 MB of text whose first and last lines name the version; the whole file is compared, so any
    # torn write differs from both versions.
    hexed = os.urandom(2_000_000).hex()
    body = "\n".join(hexed[i : i + 64] for i in range(0, len(hexed), 64))
    return f"HEAD {tag}\n{body}\nTAIL {tag}\n"


def _request(workspace: Path, name: str, current: bytes, use_edits: bool) -> tuple[bytes, bytes]:
    """The request bytes and the exact content the file has if the commit lands."""
    text = current.decode()
    tag = text.split("\n", 1)[0].removeprefix("HEAD ")
    new_tag = secrets.token_hex(4)
    if use_edits:
        new_text = text.replace(f"HEAD {tag}\n", f"HEAD {new_tag}\n", 1).replace(
            f"\nTAIL {tag}\n", f"\nTAIL {new_tag}\n", 1
        )
        change = {
            "path": name,
            "pre_image_sha256": hashlib.sha256(current).hexdigest(),
            "edits": [
                {"search": f"HEAD {tag}\n", "replace": f"HEAD {new_tag}\n"},
                {"search": f"\nTAIL {tag}\n", "replace": f"\nTAIL {new_tag}\n"},
            ],
        }
    else:
        new_text = _content(new_tag)
        change = {
            "path": name,
            "pre_image_sha256": hashlib.sha256(current).hexdigest(),
            "new_content": new_text,
        }
    return json.dumps({"workspace": str(workspace), "change": change}).encode(), new_text.encode()


def _temp_exists(directory: Path) -> bool:
    return any(entry.startswith(".seepient-commit-") for entry in os.listdir(directory))


def _fingerprint(target: Path) -> tuple[int, int, int] | None:
    try:
        info = target.stat()
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def _one_kill(workspace: Path, name: str, rng: random.Random, typical_s: float, tally: Tally) -> None:
    target = workspace / name
    old = target.read_bytes()
    before = _fingerprint(target)
    payload, new = _request(workspace, name, old, use_edits=rng.random() < 0.5)
    process = subprocess.Popen(
        [str(commit_script())], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    started = time.monotonic()
    try:
        process.stdin.write(payload)  # type: ignore[union-attr]
        process.stdin.close()  # type: ignore[union-attr]
    except BrokenPipeError:
        pass
    if rng.random() < 0.6:
        # Aim at the dangerous stretch: wait for the first sign of writing (a temp file appears, or the
        # target itself changes, as it would under an in-place writer), then kill at once or a little later.
        while (
            process.poll() is None
            and not _temp_exists(target.parent)
            and _fingerprint(target) == before
            and time.monotonic() - started < RUN_CEILING_S
        ):
            time.sleep(0.0002)
        if rng.random() >= 0.4:
            time.sleep(rng.uniform(0, 0.025))
    else:
        time.sleep(rng.uniform(0, typical_s))
    mid_commit = process.poll() is None and (_temp_exists(target.parent) or _fingerprint(target) != before)
    process.send_signal(signal.SIGKILL)
    process.wait()
    tally.kills += 1
    tally.killed_mid_commit += mid_commit
    now = target.read_bytes()
    if now == old:
        tally.old_after_kill += 1
    elif now == new:
        tally.new_after_kill += 1
    else:
        tally.violations.append(
            f"after kill {tally.kills}: {len(now)} bytes, neither old ({len(old)}) nor new ({len(new)})"
        )


def _typical_run_s(workspace: Path, name: str) -> float:
    durations = []
    for _ in range(2):
        payload, new = _request(workspace, name, (workspace / name).read_bytes(), use_edits=False)
        started = time.monotonic()
        done = subprocess.run(
            [str(commit_script())], input=payload, capture_output=True, timeout=RUN_CEILING_S
        )
        durations.append(time.monotonic() - started)
        assert done.returncode == 0, done.stderr
        assert (workspace / name).read_bytes() == new
    return max(durations)


def test_sigkill_at_random_moments_leaves_old_or_new_content(workspace: Path) -> None:
    # One directory per worker, so a worker watching for temp files sees only its own helper's.
    names = [f"w{n}/big.txt" for n in range(WORKERS)]
    for name in names:
        (workspace / name).parent.mkdir()
        (workspace / name).write_text(_content("initial"))
    typical_s = _typical_run_s(workspace, names[0])
    tallies = [Tally() for _ in names]

    def worker(index: int) -> None:
        rng = random.Random(secrets.randbits(64))
        for _ in range(KILLS_PER_WORKER):
            _one_kill(workspace, names[index], rng, typical_s, tallies[index])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    violations = [v for t in tallies for v in t.violations]
    assert violations == []
    assert sum(t.kills for t in tallies) >= 100
    # The kills really did land on both sides of the rename and inside the write, or the test proved nothing.
    assert sum(t.old_after_kill for t in tallies) > 0
    assert sum(t.new_after_kill for t in tallies) > 0
    assert sum(t.killed_mid_commit for t in tallies) > 0

    # One clean commit afterwards succeeds and sweeps away every temp file the killed helpers left behind.
    for name in names:
        payload, new = _request(workspace, name, (workspace / name).read_bytes(), use_edits=True)
        done = subprocess.run(
            [str(commit_script())], input=payload, capture_output=True, timeout=RUN_CEILING_S
        )
        assert CommitOutcome.model_validate_json(done.stdout).ok, done.stderr
        assert (workspace / name).read_bytes() == new
        assert not _temp_exists((workspace / name).parent)
