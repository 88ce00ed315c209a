"""Benchmark: many concurrent WebSocket sessions against one ``seepient serve`` process.

Each session runs one replay turn that streams ``--tokens`` text deltas. Prints events per second, p50/p99
latency from the server stamping an event (its ``ts``) to the client receiving it, lost or repeated events
(must be 0), and the server's resident memory per idle session.

    .venv/bin/python bench/server.py [--sessions 200] [--tokens 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
import yaml
from websockets.asyncio.client import connect

BIN = Path(sys.executable).parent


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _turn(url: str, token: str, session_id: str, latencies: list[float]) -> tuple[int, bool]:
    """Run one turn over the WebSocket; returns (events received, whether they were complete and in order)."""
    seqs: list[int] = []
    async with connect(
        f"{url.replace('http', 'ws')}/v1/sessions/{session_id}/ws",
        additional_headers={"Authorization": f"Bearer {token}"},
        max_queue=None,
        open_timeout=60,
    ) as ws:
        await ws.send(json.dumps({"type": "message", "prompt": "stream"}))
        async for raw in ws:
            now = time.time()
            frame = json.loads(raw)
            if "seq" not in frame:
                continue
            latencies.append(now - frame["ts"])
            seqs.append(frame["seq"])
            if frame["type"] == "turn_completed":
                break
    return len(seqs), seqs == list(range(1, len(seqs) + 1))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=500)
    parser.add_argument("--profile", type=Path, help="run the server under cProfile and write its stats here")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="seepient-bench-"))
    workspace = root / "ws"
    workspace.mkdir()
    script = root / "script.yaml"
    script.write_text(yaml.safe_dump([{"text": " ".join(f"t{i}" for i in range(args.tokens))}]))
    env = {**os.environ, "SEEPIENT_HOME": str(root / "home")}
    database = f"sqlite:///{root / 'bench.db'}"
    token = subprocess.run(
        [str(BIN / "seepient"), "tokens", "create", "--principal", "bench", "--database", database],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    config = root / "server.json"
    # The per-token rate limit would throttle one client opening hundreds of sessions at once.
    config.write_text(
        json.dumps(
            {
                "server": {
                    "defaultPrincipal": {"roots": [str(root)], "allowReplay": True},
                    "rateLimit": {"requestsPerSecond": 100000, "burst": 100000},
                }
            }
        )
    )
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    launcher = [str(BIN / "seepient")]
    if args.profile is not None:
        launcher = [
            sys.executable,
            "-c",
            "import cProfile, sys; from seepient.surfaces.cli.entry import main; "
            f"sys.argv = ['seepient', *sys.argv[1:]]; cProfile.run('main()', {str(args.profile)!r})",
        ]
    server = subprocess.Popen(
        [
            *launcher,
            "serve",
            "--port",
            str(port),
            "--database",
            database,
            "--config",
            str(config),
        ],
        env=env,
        cwd=root,
    )
    try:
        async with httpx2.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, trust_env=False, timeout=60
        ) as http:
            for _ in range(300):
                try:
                    if (await http.get("/v1/health")).status_code == 200:
                        break
                except httpx2.TransportError:
                    await asyncio.sleep(0.1)
            # One session first, so imports and caches are not charged to the idle sessions.
            warm = await http.post(
                "/v1/sessions", json={"workspace": str(workspace), "model": f"replay:{script}"}
            )
            warm.raise_for_status()
            before = _rss_kb(server.pid)
            ids = []
            for _ in range(args.sessions):
                created = await http.post(
                    "/v1/sessions", json={"workspace": str(workspace), "model": f"replay:{script}"}
                )
                created.raise_for_status()
                ids.append(created.json()["id"])
            idle_kb = (_rss_kb(server.pid) - before) / args.sessions

        latencies: list[float] = []
        started = time.perf_counter()
        results = await asyncio.gather(*(_turn(url, token, sid, latencies) for sid in ids))
        elapsed = time.perf_counter() - started
    finally:
        # SIGINT lets uvicorn shut down cleanly, so a profiled server writes its stats.
        server.send_signal(signal.SIGINT)
        server.wait(60)

    expected_per_turn = args.tokens + 2  # turn_started, the deltas, turn_completed
    received = sum(n for n, _ in results)
    lost = sum(max(0, expected_per_turn - n) for n, _ in results)
    disordered = sum(1 for _, ok in results if not ok)
    latencies.sort()
    report = {
        "sessions": args.sessions,
        "tokens_per_turn": args.tokens,
        "events": received,
        "seconds": round(elapsed, 3),
        "events_per_second": round(received / elapsed),
        "latency_p50_ms": round(statistics.median(latencies) * 1000, 2),
        "latency_p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
        "lost_events": lost,
        "sessions_out_of_order": disordered,
        "idle_session_kb": round(idle_kb, 1),
        "targets": {"latency_p99_ms": 100, "idle_session_kb": 200, "lost_events": 0},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
