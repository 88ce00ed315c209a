"""End to end: the TypeScript client (``clients/typescript``) against a real ``seepient serve`` process with
the replay model, through Node's built-in test runner, over Server-Sent Events and over the WebSocket; and
its checked-in ``dist/`` is exactly what ``tsc`` makes of ``src/``.

Without ``node`` (or ``tsc``) these tests skip locally and fail in CI (``CI`` set), where both are installed.
"""

from __future__ import annotations

import asyncio
import filecmp
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from seepient.store import Store, database_url
from tests.conftest import BIN
from tests.support.ports import free_port

pytestmark = pytest.mark.e2e

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"


def _tool(name: str, why: str) -> str:
    found = shutil.which(name)
    if found is None:
        message = (
            f"`{name}` is not installed, so {why} cannot run (Debian: apt-get install {_PACKAGES[name]})"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


_PACKAGES = {"node": "nodejs", "tsc": "node-typescript"}


@dataclass
class _Served:
    url: str
    env: dict[str, str]
    process: subprocess.Popen[str]


async def _create_tokens(database: str, home: Path, principals: tuple[str, ...]) -> dict[str, str]:
    # What `seepient tokens create` does, for three principals without three interpreter starts.
    store = await Store.open(database_url(database, home))
    try:
        return {name: (await store.create_token(name)).secret for name in principals}
    finally:
        await store.aclose()


@pytest.fixture
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Served]:
    # One server a transport: the suite's own requests draw on one token's rate (a burst of 60, 20 a second),
    # and the two suites back to back on a fast machine emptied it (a RateLimitError in the second one's tests).
    _tool("node", "the TypeScript client's tests")
    base = tmp_path_factory.mktemp("ts-sdk")
    root, outside, home = base / "root", base / "outside", base / "home"
    scratch = root / "scripts"  # replay scripts must lie inside the roots the server grants
    for directory in (root / "ws", scratch, outside, home):
        directory.mkdir(parents=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "SEEPIENT_HOME": str(base / "seepient-home"),
        "LANG": "C.UTF-8",
    }
    database = f"sqlite:///{base / 'server.db'}"
    tokens = asyncio.run(_create_tokens(database, base / "seepient-home", ("alice", "bob", "carol")))
    port = free_port()
    process = subprocess.Popen(
        [str(BIN / "seepient"), "serve", "--port", str(port), "--database", database],
        env=env,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise AssertionError(f"seepient serve exited: {process.stderr.read()}")  # type: ignore[union-attr]
            try:
                if httpx2.get(f"{url}/v1/health", timeout=1, trust_env=False).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("seepient serve did not answer /v1/health within 30 s")
            time.sleep(0.05)
        node_env = {
            "PATH": env["PATH"],
            "HOME": str(home),
            "SEEPIENT_URL": url,
            "SEEPIENT_TOKEN": tokens["alice"],
            "SEEPIENT_OTHER_TOKEN": tokens["bob"],
            "SEEPIENT_LIMITED_TOKEN": tokens["carol"],
            "SEEPIENT_WORKSPACE": str(root / "ws"),
            "SEEPIENT_SCRATCH": str(scratch),
            "SEEPIENT_OUTSIDE": str(outside),
        }
        yield _Served(url=url, env=node_env, process=process)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def _node_test(served: _Served, *flags: str, transport: str) -> str:
    node = _tool("node", "the TypeScript client's tests")
    done = subprocess.run(
        [node, *flags, "--test", "test/"],
        cwd=PACKAGE,
        env={**served.env, "SEEPIENT_TRANSPORT": transport},
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    summary = dict(re.findall(r"^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$", done.stdout, re.M))
    assert done.returncode == 0, f"node --test failed ({transport}):\n{output[-12000:]}"
    assert summary.get("fail") == "0" and summary.get("cancelled") == "0", output[-12000:]
    # Every test ran: a suite skipped for want of a server or a WebSocket would prove nothing.
    assert summary.get("skipped") == "0" and int(summary.get("pass", "0")) >= 20, output[-12000:]
    return output


def test_the_client_over_server_sent_events(served: _Served) -> None:
    output = _node_test(served, transport="sse")
    assert "a dropped event stream is resumed after the last seq" in output
    assert served.process.poll() is None, "the server survived the client's tests"


def test_the_client_over_the_websocket(served: _Served) -> None:
    # Node 20 has a WebSocket only behind this flag; browsers and Node 22+ have one by default.
    _node_test(served, "--experimental-websocket", transport="websocket")


def test_dist_is_what_tsc_makes_of_src_and_its_declarations_type_check_a_consumer(tmp_path: Path) -> None:
    """``dist/`` is exactly tsc's output for ``src/``; a program written against the published types (resolved
    through package.json ``exports``) compiles, and its marked misuses of them do not."""
    tsc = _tool("tsc", "the check that dist/ matches src/")
    # Both compilations at once: each spends most of its time starting the compiler.
    build = subprocess.Popen(
        [tsc, "-p", str(PACKAGE / "tsconfig.json"), "--outDir", str(tmp_path / "dist")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    consumer = subprocess.Popen(
        [tsc, "-p", str(PACKAGE / "test" / "types" / "tsconfig.json")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    built, checked = build.communicate(timeout=300)[0], consumer.communicate(timeout=300)[0]
    assert build.returncode == 0, built
    assert consumer.returncode == 0, f"test/types/consumer.ts against dist/*.d.ts:\n{checked}"
    fresh = sorted(p.relative_to(tmp_path / "dist") for p in (tmp_path / "dist").rglob("*") if p.is_file())
    committed = sorted(p.relative_to(PACKAGE / "dist") for p in (PACKAGE / "dist").rglob("*") if p.is_file())
    assert committed == fresh, (
        "dist/ holds other files than tsc makes: rebuild with `tsc -p clients/typescript`"
    )
    _, mismatch, errors = filecmp.cmpfiles(
        tmp_path / "dist", PACKAGE / "dist", [str(p) for p in fresh], shallow=False
    )
    assert not mismatch and not errors, (
        f"dist/ is stale for {mismatch + errors}: rebuild with `tsc -p clients/typescript/tsconfig.json`"
    )
