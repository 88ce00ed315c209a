"""Startup of the full-screen UI: from exec of ``seepient`` on a pseudo-terminal to the first frame that shows
the interactive prompt with its status bar, beside ``python -c pass`` on the same kind of terminal.

Goal (issue #19): at most 30× that baseline. Also shown: the time until the session is open behind the prompt.
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
        }
        tui = [str(BIN / "seepient"), "--model", f"replay:{script}", "--workspace", str(workspace)]
        baseline = [sys.executable, "-c", "pass"]
        _on_terminal(tui, env, workspace, _SESSION_OPEN)  # warm the page cache and the bytecode
        prompt_up = [_on_terminal(tui, env, workspace, _PROMPT_UP) for _ in range(args.runs)]
        session_open = [_on_terminal(tui, env, workspace, _SESSION_OPEN) for _ in range(args.runs)]
        raw = [_on_terminal(baseline, env, workspace, None) for _ in range(args.runs)]
    ratio = median_ms(prompt_up) / median_ms(raw)
    goal = f"≤ 30× (issue #19): {'met' if ratio <= 30 else 'NOT met'}"
    print(report("tui startup to interactive prompt", prompt_up, raw, "python -c pass", goal))
    print(report("tui startup to session open", session_open, raw, "python -c pass", "(informational)"))


if __name__ == "__main__":
    main()
