"""Startup of the full-screen UI: from exec of ``seepient`` on a pseudo-terminal to the first frame that shows
the interactive prompt with its status bar, beside ``python -c pass`` on the same kind of terminal.

Goal (issue #19): at most 30× that baseline, served by the warm process (every start after the first,
``surfaces/cli/warm_start/``). Also shown: the same from a cold start (the first after an installation or an
upgrade, or with ``SEEPIENT_WARM_START=0``), and the time until the session is open behind the prompt.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

from bench._timing import median_ms, report
from bench._warm import listening_pid, served_starts

BIN = Path(sys.executable).parent
_PROMPT_UP = b"/help for commands"
"""Written in the first frame, with the prompt (already taking input) and the status bar."""
_SESSION_OPEN = b"workspace "
"""Written once the runtime is loaded and the session open (a prompt typed earlier runs then)."""


def _on_terminal(argv: list[str], env: dict[str, str], cwd: Path, ready: bytes | None) -> float:
    """Seconds from spawn until ``ready`` is on the screen (or until exit when ``ready`` is None)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 32, 120, 0, 0))
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True
    )
    os.close(slave)
    seen = b""
    elapsed: float | None = None
    try:
        while elapsed is None:
            readable, _, _ = select.select([master], [], [], 30)
            if not readable:
                raise RuntimeError(f"{argv[0]} showed nothing for 30 s; screen so far: {seen[-400:]!r}")
            try:
                chunk = os.read(master, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                elapsed = time.perf_counter() - start
                break
            seen += chunk
            if ready is not None and ready in seen:
                elapsed = time.perf_counter() - start
        if ready is not None and ready not in seen:
            raise RuntimeError(f"{argv[0]} exited before it was ready; it printed: {seen[-400:]!r}")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        # Keep draining so a process that writes on its way out is never blocked on a full terminal.
        while process.poll() is None:
            if select.select([master], [], [], 0.05)[0]:
                try:
                    os.read(master, 65536)
                except OSError:
                    pass
        os.close(master)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        script = root / "script.yaml"
        script.write_text("- text: hello\n")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root),
            "SEEPIENT_HOME": str(root / "seepient-home"),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "SEEPIENT_WARM_START": "0",
        }
        tui = [str(BIN / "seepient"), "--model", f"replay:{script}", "--workspace", str(workspace)]
        baseline = [sys.executable, "-c", "pass"]
        _on_terminal(tui, env, workspace, _SESSION_OPEN)  # warm the page cache and the bytecode
        cold_up = [_on_terminal(tui, env, workspace, _PROMPT_UP) for _ in range(args.runs)]
        warm_env = {**env, "SEEPIENT_WARM_START": "1", "SEEPIENT_WARM_IDLE_SECONDS": "60"}
        warm_pid = _start_warm_process(tui, warm_env, workspace, root / "seepient-home" / "run")
        try:
            prompt_up = [_on_terminal(tui, warm_env, workspace, _PROMPT_UP) for _ in range(args.runs)]
            session_open = [_on_terminal(tui, warm_env, workspace, _SESSION_OPEN) for _ in range(args.runs)]
            served = served_starts(root / "seepient-home" / "run")
        finally:
            os.kill(warm_pid, signal.SIGTERM)
        if served != 2 * args.runs:
            raise SystemExit(f"the warm process served {served} of {2 * args.runs} starts")
        raw = [_on_terminal(baseline, env, workspace, None) for _ in range(args.runs)]
    ratio = median_ms(prompt_up) / median_ms(raw)
    goal = f"≤ 30× (issue #19): {'met' if ratio <= 30 else 'NOT met'}"
    print(report("tui startup to interactive prompt", prompt_up, raw, "python -c pass", goal))
    print(report("  the same, cold", cold_up, raw, "python -c pass", "(informational: the first start)"))
    print(report("tui startup to session open", session_open, raw, "python -c pass", "(informational)"))


def _start_warm_process(tui: list[str], env: dict[str, str], cwd: Path, folder: Path) -> int:
    """A cold ``seepient run`` starts the warm process as it ends (the TUI's bench ends each start with SIGTERM,
    which leaves before that); the same one serves the TUI. Its pid, once it listens."""
    run = [tui[0], "run", *tui[1:], "hello"]
    subprocess.run(run, env=env, cwd=cwd, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    return listening_pid(folder)


if __name__ == "__main__":
    main()
