"""The real console script's ``main`` in a fresh interpreter, after a probe of the test's: the probe arranges
to print one JSON line as the process leaves (the CLI leaves through ``os._exit``, after the ``atexit``
handlers), and the test gets that line back."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_MAIN = """
sys.argv = ["seepient", *sys.argv[1:]]
from seepient.surfaces.cli.entry import main

main()
"""


def probe_cli(probe: str, argv: Sequence[str], *, env: dict[str, str], cwd: Path) -> tuple[str, Any]:
    """Run ``seepient ARGV`` after ``probe`` (which imports ``sys`` and registers its report with ``atexit``);
    the command must succeed. Returns its standard output and the JSON of its last line."""
    done = subprocess.run(
        [sys.executable, "-c", probe + _MAIN, *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(done.stdout.splitlines()[-1])
