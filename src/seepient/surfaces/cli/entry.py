"""The ``seepient`` console script. ``--version`` answers before any heavy import, so it costs little
more than starting Python; everything else loads the Typer application."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from seepient import __version__

        sys.stdout.write(f"seepient {__version__}\n")
        return
    from seepient.surfaces.cli.app import run_app

    run_app()
