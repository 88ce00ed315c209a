"""The ``seepient`` console script. ``--version`` answers before any heavy import, so it costs little
more than starting Python; ``run`` and the TUI are handed to the warm process when one serves this caller
(``warm_start/``); everything else loads the Typer application, and leaves without the interpreter's teardown
once the command's work is done."""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading

TYPE_CHECKING = False  # not ``typing``'s: the warm start's client comes through here and loads no typing
if TYPE_CHECKING:
    from typing import NoReturn


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from seepient import __version__

        sys.stdout.write(f"seepient {__version__}\n")
        return
    from seepient.surfaces.cli.command_words import opens_the_tui

    warm = sys.argv[1:2] == ["run"] or opens_the_tui(sys.argv[1:])
    if warm:
        from seepient.surfaces.cli.warm_start.client import run_in_warm_process

        status = run_in_warm_process()
        if status is not None:
            _leave(status)
    if sys.argv[1:2] == ["run"]:
        _pause_collection()
    run_command(after_a_cold_run=warm)


def run_command(*, after_a_cold_run: bool = False) -> NoReturn:
    """The command in ``sys.argv``, here (the warm process's runs start here too); with ``after_a_cold_run``,
    the warm process is started for the next ``run`` or TUI once this one's work is done. Leaves the process."""
    _refuse_pydantic_plugins()
    # The console script's process is Seepient's own; a program that imports Seepient (the SDK) keeps its
    # choice of async library, and the worker image carries nothing of this.
    from seepient._asyncio_only import keep_trio_out_of_httpcore

    keep_trio_out_of_httpcore()
    from seepient.surfaces.cli.app import run_app

    status = 0
    try:
        run_app()
    except SystemExit as exit_:
        status = _exit_status(exit_.code)
    if after_a_cold_run:
        from seepient.surfaces.cli.warm_start.client import start_warm_process

        start_warm_process()
    _leave(status)


def _refuse_pydantic_plugins() -> None:
    """No installed package hooks into the validation of Seepient's records: a pydantic plugin is handed every
    value validated (keys in settings, file contents in actions), and finding plugins reads the metadata of
    every installed distribution, ~15 ms of each start. Children never see the variable: every environment
    Seepient hands on is built from an allow-list (``execution.environment``)."""
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"


def _pause_collection() -> None:
    """A run's start creates several hundred thousand objects that live as long as the process (modules,
    classes, pydantic's validators) and hardly any garbage; the cyclic collector would walk them over and
    over while they are made, a sixth of the start. It resumes once the session is open (``startup_done``)."""
    gc.disable()


def startup_done() -> None:
    """The start's objects are kept out of the collector's sight from now on (``gc.freeze``), and collection
    resumes for the work itself. Harmless when collection was never paused."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def _leave(status: int) -> NoReturn:
    """Interpreter shutdown garbage-collects every module a command loaded (about a quarter of a second on a
    plain run). By the time a command returns, its sessions are closed: the store committed, the audit log
    closed, background shells, MCP servers and language servers reaped. So exit now, after what the shutdown
    would do first: wait for a thread still working (none should be), run the ``atexit`` handlers and flush
    the standard streams. A run the warm process forked leaves the same way."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            # A reader that went away (``seepient … | head``) is not a failure of the command.
            pass
    os._exit(status)
