"""Run by ``bench.run_path`` in a fresh interpreter: a one-step ``seepient run`` (loading what every run loads),
a ten-step run (the process's first shell steps, one-time costs and all) and a one-step run again, each through
the CLI's own entry, and print the ten-step run's extra time over the one-step run per step, in ms.

Process start and exit are the same for both runs and cancel out of the difference; measured in one process,
the difference is not buried in their noise (which reaches hundreds of ms when the machine is busy)."""

from __future__ import annotations

import sys
import time


def _run(argv: list[str], steps: int) -> float:
    from seepient.surfaces.cli.app import run_app

    sys.argv = ["seepient", *argv, "--max-steps", str(steps + 1), "say done"]
    start = time.perf_counter()
    try:
        run_app()
    except SystemExit as exit_:
        if exit_.code:
            raise
    return time.perf_counter() - start


def main() -> None:
    argv = sys.argv[1:]
    _run(argv, 1)
    ten = _run(argv, 10)
    one = _run(argv, 1)
    sys.stderr.write(f"shell-step-ms {(ten - one) / 9 * 1000:.3f}\n")


if __name__ == "__main__":
    main()
