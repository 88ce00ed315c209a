"""Benchmark: many concurrent WebSocket sessions against one ``seepient serve`` process, beside a raw baseline.

Each session runs one replay turn that streams ``--tokens`` text deltas, twice: *unpaced* (the replay model
streams as fast as the server takes it, so every session's tokens are offered at once and queue: this shows
throughput) and *paced* (each turn streams at ``--tokens-per-second``, as a provider does: this shows the
latency a client sees). Each run prints events per second, p50/p99 latency from the server stamping an event
(its ``ts``) to the client receiving it, the p99 of the events that arrived after the first second (when all
turns have started: the first second is every client connecting and starting a turn at once), the CPU time
the server used (in all, per event, which load distorts least, and its event loop's part), lost or repeated events (must be 0), how late a paced turn ends at p99 (its
``turn_completed`` arriving against the client's message going out plus the time the tokens take at that
pace: every client starts at once, so this includes the first second's queue, as a user would see it), and, once, the
server's resident memory per idle session; last, which of issue #19's goals each figure meets. The client runs on the same machine, so its own work is part of every latency, ours and raw.

The raw baseline is the same client against a bare ASGI app on the same uvicorn WebSocket stack that sends
the same number of JSON frames at the same pace with no runtime, store or fan-out: the floor this machine
and this client allow.

    .venv/bin/python -m bench.server [--sessions 200] [--tokens 500] [--tokens-per-second 25] [--repeat 1]
        [--profile FILE] [--profile-paced FILE]   (cProfile of the streaming only, unpaced or paced)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import yaml
from websockets.asyncio.client import connect

BIN = Path(sys.executable).parent
TARGETS = {"latency_p99_ms": 100, "turn_end_late_p99_ms": 250, "idle_session_kb": 200, "lost_events": 0}


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _cpu_s(pid: int, *, main_thread: bool = False) -> float:
    """User plus system CPU time the process (or only its main thread, the event loop's) has used so far."""
    stat = Path(f"/proc/{pid}/task/{pid}/stat" if main_thread else f"/proc/{pid}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: A profiled server: cProfile runs from SIGUSR1 to SIGUSR2 (the streaming, not start-up or session creation)
#: in the main thread, where the event loop is. ``run_app``, not the entry point, which leaves through
#: ``os._exit`` before the stats could be written.
_PROFILED = """
import cProfile, contextlib, signal, sys
from seepient.surfaces.cli.app import run_app
profiler = cProfile.Profile()
signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())
signal.signal(signal.SIGUSR2, lambda *_: profiler.disable())
sys.argv = ["seepient", *sys.argv[1:]]
with contextlib.suppress(SystemExit):
    run_app()
profiler.dump_stats({stats!r})
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Run:
    events: int
    seconds: float
    latencies: list[float]
    settled: list[float]
    """The latencies of events that arrived after the first second, when every turn had started."""
    lost: int
    out_of_order: int
    turn_spans: list[float]
    """Each turn's time from the client sending its message to its ``turn_completed`` arriving."""
    nominal_s: float = 0.0
    """How long a turn's tokens take at the run's pace (0 when unpaced)."""
    server_cpu_s: float = 0.0
    server_loop_cpu_s: float = 0.0
    """The part of ``server_cpu_s`` the main thread used (the rest is the database driver's threads)."""

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies) or [0.0]
        return {
            "events": self.events,
            "seconds": round(self.seconds, 3),
            "events_per_second": round(self.events / self.seconds) if self.seconds else 0,
            "latency_p50_ms": round(statistics.median(ordered) * 1000, 2),
            "latency_p99_ms": _p99_ms(ordered),
            "latency_p99_after_first_second_ms": _p99_ms(sorted(self.settled) or [0.0]),
            "lost_events": self.lost,
            "sessions_out_of_order": self.out_of_order,
            "server_cpu_s": round(self.server_cpu_s, 2),
            "server_cpu_us_per_event": round(self.server_cpu_s / self.events * 1e6) if self.events else 0,
            "server_loop_cpu_s": round(self.server_loop_cpu_s, 2),
            "turn_end_late_p99_ms": _p99_ms(
                sorted(span - self.nominal_s for span in self.turn_spans) or [0.0]
            ),
        }


def _p99_ms(ordered: list[float]) -> float:
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2)


async def _turn(
    ws_url: str, headers: dict[str, str], latencies: list[tuple[float, float]]
) -> tuple[list[int], float]:
    """Run one turn over a WebSocket; returns the seqs received, in arrival order, and the time from sending
    the message to the turn's end arriving."""
    seqs: list[int] = []
    ended = 0.0
    async with connect(ws_url, additional_headers=headers, max_queue=None, open_timeout=60) as ws:
        await ws.send(json.dumps({"type": "message", "prompt": "stream"}))
        sent = time.time()
        async for raw in ws:
            now = time.time()
            frame = json.loads(raw)
            if "seq" not in frame:
                continue
            latencies.append((now, now - frame["ts"]))
            seqs.append(frame["seq"])
            if frame["type"] == "turn_completed":
                ended = now
                break
    return seqs, ended - sent


async def _drive(urls: list[str], headers: dict[str, str], expected_per_turn: int, nominal_s: float) -> Run:
    latencies: list[tuple[float, float]] = []
    began = time.time()
    started = time.perf_counter()
    turns = await asyncio.gather(*(_turn(url, headers, latencies) for url in urls))
    elapsed = time.perf_counter() - started
    results = [seqs for seqs, _ in turns]
    return Run(
        events=sum(len(seqs) for seqs in results),
        seconds=elapsed,
        latencies=[latency for _, latency in latencies],
        settled=[latency for arrived, latency in latencies if arrived - began >= 1.0],
        lost=sum(max(0, expected_per_turn - len(set(seqs))) for seqs in results),
        out_of_order=sum(1 for seqs in results if seqs != list(range(1, len(seqs) + 1))),
        turn_spans=[span for _, span in turns],
        nominal_s=nominal_s,
    )


async def _wait_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    async with httpx2.AsyncClient(base_url=url, trust_env=False, timeout=5) as http:
        for _ in range(600):
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode} before it answered")
            try:
                if (await http.get("/v1/health")).status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError("the server did not answer /v1/health within 60 s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    # SIGINT lets uvicorn shut down cleanly, so a profiled server writes its stats.
    process.send_signal(signal.SIGINT)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def _seepient(
    args: argparse.Namespace, pace: float | None, *, profile: Path | None
) -> tuple[Run, float]:
    """One run against a fresh ``seepient serve``; returns the run and the memory per idle session (KB)."""
    root = Path(tempfile.mkdtemp(prefix="seepient-bench-"))
    try:
        workspace = root / "ws"
        workspace.mkdir()
        turn: dict[str, Any] = {"text": " ".join(f"t{i}" for i in range(args.tokens))}
        if pace is not None:
            turn["tokens_per_second"] = pace
        script = root / "script.yaml"
        script.write_text(yaml.safe_dump([turn]))
        env = {**os.environ, "SEEPIENT_HOME": str(root / "home")}
        database = args.database or f"sqlite:///{root / 'bench.db'}"
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
        launcher = [str(BIN / "seepient")]
        if profile is not None:
            launcher = [sys.executable, "-c", _PROFILED.format(stats=str(profile))]
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [*launcher, "serve", "--port", str(port), "--database", database, "--config", str(config)],
            env=env,
            cwd=root,
        )
        headers = {"Authorization": f"Bearer {token}"}
        try:
            await _wait_healthy(url, server)
            async with httpx2.AsyncClient(base_url=url, headers=headers, trust_env=False, timeout=60) as http:
                body = {"workspace": str(workspace), "model": f"replay:{script}"}
                # One session first, so imports and caches are not charged to the idle sessions.
                (await http.post("/v1/sessions", json=body)).raise_for_status()
                before = _rss_kb(server.pid)
                ids = []
                for _ in range(args.sessions):
                    created = await http.post("/v1/sessions", json=body)
                    created.raise_for_status()
                    ids.append(created.json()["id"])
                idle_kb = (_rss_kb(server.pid) - before) / args.sessions
            ws_urls = [f"ws://127.0.0.1:{port}/v1/sessions/{sid}/ws" for sid in ids]
            cpu, loop_cpu = _cpu_s(server.pid), _cpu_s(server.pid, main_thread=True)
            if profile is not None:
                server.send_signal(signal.SIGUSR1)
            # turn_started, the deltas, turn_completed
            run = await _drive(ws_urls, headers, args.tokens + 2, _nominal_s(args, pace))
            if profile is not None:
                server.send_signal(signal.SIGUSR2)
            run.server_cpu_s = _cpu_s(server.pid) - cpu
            run.server_loop_cpu_s = _cpu_s(server.pid, main_thread=True) - loop_cpu
        finally:
            _stop(server)
        return run, idle_kb
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _raw(args: argparse.Namespace, pace: float | None) -> Run:
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.server",
            "--serve-raw",
            str(port),
            "--tokens",
            str(args.tokens),
            *(["--raw-paced", "--tokens-per-second", str(pace)] if pace is not None else []),
        ],
        cwd=Path(__file__).resolve().parent.parent,
    )
    try:
        await _wait_healthy(f"http://127.0.0.1:{port}", server)
        urls = [f"ws://127.0.0.1:{port}/ws/{i}" for i in range(args.sessions)]
        cpu, loop_cpu = _cpu_s(server.pid), _cpu_s(server.pid, main_thread=True)
        run = await _drive(urls, {}, args.tokens + 2, _nominal_s(args, pace))
        run.server_cpu_s = _cpu_s(server.pid) - cpu
        run.server_loop_cpu_s = _cpu_s(server.pid, main_thread=True) - loop_cpu
        return run
    finally:
        _stop(server)


def _nominal_s(args: argparse.Namespace, pace: float | None) -> float:
    return args.tokens / pace if pace else 0.0


def _raw_app(tokens: int, pace: float | None) -> Any:
    """A bare ASGI app: ``/v1/health``, and a WebSocket that answers a message with ``tokens + 2`` event-sized
    JSON frames (paced like the replay model when ``pace`` is set)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] == "http":
            await receive()
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
            )
            await send({"type": "http.response.body", "body": b"ok"})
            return
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        await receive()  # the client's message frame
        session = f"ses_{scope['path'].rsplit('/', 1)[-1]:0>24}"
        loop = asyncio.get_running_loop()
        started = loop.time()
        for seq in range(1, tokens + 3):
            kind = "turn_started" if seq == 1 else "turn_completed" if seq == tokens + 2 else "text_delta"
            frame = {
                "session_id": session,
                "seq": seq,
                "ts": time.time(),
                "type": kind,
                "turn_id": "trn_" + "0" * 24,
            }
            if kind == "text_delta":
                frame["text"] = f"t{seq - 2} "
            await send({"type": "websocket.send", "text": json.dumps(frame)})
            await asyncio.sleep(max(0.0, started + seq / pace - loop.time()) if pace else 0)
        await receive()

    return app


def _serve_raw(port: int, tokens: int, pace: float | None) -> None:
    import uvicorn

    uvicorn.run(
        _raw_app(tokens, pace), host="127.0.0.1", port=port, log_level="warning", ws="websockets-sansio"
    )


def _line(label: str, ours: dict[str, Any], raw: dict[str, Any], *, paced: bool = False) -> str:
    return (
        f"{label:<9} events/s {ours['events_per_second']:>7} (raw {raw['events_per_second']:>7})   "
        f"p50 {ours['latency_p50_ms']:>9.1f} ms (raw {raw['latency_p50_ms']:>8.1f})   "
        f"p99 {ours['latency_p99_ms']:>9.1f} ms (raw {raw['latency_p99_ms']:>8.1f})   "
        f"p99 after 1st s {ours['latency_p99_after_first_second_ms']:>8.1f} ms "
        f"(raw {raw['latency_p99_after_first_second_ms']:>7.1f})   "
        f"server CPU {ours['server_cpu_s']:>6.2f} s (raw {raw['server_cpu_s']:>5.2f}), "
        f"{ours['server_cpu_us_per_event']} us/event (raw {raw['server_cpu_us_per_event']}), "
        f"event loop {ours['server_loop_cpu_s']:.2f} s   "
        f"lost {ours['lost_events']} (raw {raw['lost_events']})   out of order {ours['sessions_out_of_order']}"
        + (
            f"   turn end late p99 {ours['turn_end_late_p99_ms']:.1f} ms (raw {raw['turn_end_late_p99_ms']:.1f})"
            if paced
            else ""
        )
    )


def _goals(report: dict[str, Any]) -> list[str]:
    """Issue #19's server goals, each with the figure, its raw baseline and whether it is met."""
    ours, raw = report["paced"]["seepient"], report["paced"]["raw"]
    rows = [
        ("p99 event latency, paced", ours["latency_p99_ms"], raw["latency_p99_ms"], "latency_p99_ms", "ms"),
        ("turn end late at p99, paced", ours["turn_end_late_p99_ms"], raw["turn_end_late_p99_ms"],
         "turn_end_late_p99_ms", "ms"),
        ("events lost, both runs", ours["lost_events"] + report["unpaced"]["seepient"]["lost_events"],
         raw["lost_events"] + report["unpaced"]["raw"]["lost_events"], "lost_events", ""),
        ("memory per idle session", report["idle_session_kb"], None, "idle_session_kb", "KB"),
    ]  # fmt: skip
    lines = []
    for label, figure, baseline, key, unit in rows:
        met = figure <= TARGETS[key]
        against = f" (raw {baseline}{unit and ' ' + unit})" if baseline is not None else ""
        lines.append(
            f"goal {label:<28} {figure}{unit and ' ' + unit}{against}   goal <= {TARGETS[key]}{unit and ' ' + unit}"
            f"   {'met' if met else 'NOT met'}"
        )
    return lines


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=500)
    parser.add_argument(
        "--tokens-per-second", type=float, default=25.0, help="the pace of the paced run, per session"
    )
    parser.add_argument("--repeat", type=int, default=1, help="run everything this many times")
    parser.add_argument("--database", help="a database URL for the server (default: a fresh SQLite file)")
    parser.add_argument("--profile", type=Path, help="run the unpaced server under cProfile, stats here")
    parser.add_argument("--profile-paced", type=Path, help="run the paced server under cProfile, stats here")
    parser.add_argument("--serve-raw", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--raw-paced", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


async def main(args: argparse.Namespace) -> None:
    reports = []
    for round_number in range(1, args.repeat + 1):
        unpaced, idle_kb = await _seepient(args, None, profile=args.profile)
        raw_unpaced = await _raw(args, None)
        paced, _ = await _seepient(args, args.tokens_per_second, profile=args.profile_paced)
        raw_paced = await _raw(args, args.tokens_per_second)
        report = {
            "round": round_number,
            "sessions": args.sessions,
            "tokens_per_turn": args.tokens,
            "idle_session_kb": round(idle_kb, 1),
            "unpaced": {"seepient": unpaced.summary(), "raw": raw_unpaced.summary()},
            "paced": {
                "tokens_per_second": args.tokens_per_second,
                "seepient": paced.summary(),
                "raw": raw_paced.summary(),
            },
            "targets": TARGETS,
        }
        reports.append(report)
        print(json.dumps(report))
        print(_line("unpaced", report["unpaced"]["seepient"], report["unpaced"]["raw"]))
        paced_label = f"{args.tokens_per_second:g} tok/s"
        print(_line(paced_label, report["paced"]["seepient"], report["paced"]["raw"], paced=True))
        print(f"idle session {report['idle_session_kb']} KB (target < {TARGETS['idle_session_kb']} KB)")
        print("\n".join(_goals(report)), flush=True)
    if len(reports) > 1:
        for mode in ("unpaced", "paced"):
            keys = (
                "events_per_second",
                "latency_p50_ms",
                "latency_p99_ms",
                "latency_p99_after_first_second_ms",
                "turn_end_late_p99_ms",
            )
            for key in (*keys, "server_cpu_s", "server_cpu_us_per_event"):
                values = [r[mode]["seepient"][key] for r in reports]
                print(
                    f"{mode:<8} {key:<34} median {statistics.median(values):>10.1f}   "
                    f"min {min(values):>10.1f}   max {max(values):>10.1f}"
                )
        idle = [r["idle_session_kb"] for r in reports]
        print(
            f"idle session KB     median {statistics.median(idle):.1f}   min {min(idle):.1f}   max {max(idle):.1f}"
        )


if __name__ == "__main__":
    arguments = _arguments()
    if arguments.serve_raw is not None:
        _serve_raw(
            arguments.serve_raw,
            arguments.tokens,
            arguments.tokens_per_second if arguments.raw_paced else None,
        )
    else:
        asyncio.run(main(arguments))
