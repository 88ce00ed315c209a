"""The console script's process: a run's start is made without the cyclic collector, which is back (with the
start's objects frozen out of its sight) by the time the turn runs; other commands never pause it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tests.support.cli_probe import probe_cli

# The collector's state as the turn's model call sees it, and at the end.
_PROBE = """
import atexit, gc, json, sys

seen = {}
atexit.register(lambda: print(json.dumps({**seen, "at_exit": gc.isenabled()})))

from seepient.models import scripted

original = scripted.ScriptedModel.stream

def stream(self, *args, **kwargs):
    seen.setdefault("during_turn", gc.isenabled())
    seen.setdefault("frozen", gc.get_freeze_count())
    return original(self, *args, **kwargs)

scripted.ScriptedModel.stream = stream
"""


def _probe(tmp_path: Path, *argv: str, probe: str = _PROBE) -> tuple[str, dict[str, object]]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_COLOR": "1"}
    return probe_cli(probe, argv, env=env, cwd=tmp_path)


def _replay_run(tmp_path: Path) -> list[str]:
    """``seepient run`` of a one-turn replay that answers "done", in a fresh workspace, stored nowhere."""
    (tmp_path / "ws").mkdir()
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump([{"text": "done"}]))
    return [
        "run",
        "-y",
        "--ephemeral",
        "--model",
        f"replay:{script}",
        "--workspace",
        str(tmp_path / "ws"),
        "hi",
    ]


def test_a_run_collects_again_once_its_session_is_open(tmp_path: Path) -> None:
    seen = _probe(tmp_path, *_replay_run(tmp_path))[1]
    assert seen["during_turn"] is True and seen["at_exit"] is True
    assert isinstance(seen["frozen"], int) and seen["frozen"] > 10_000, "the start's objects were frozen"


def test_another_command_never_pauses_the_collector(tmp_path: Path) -> None:
    assert _probe(tmp_path, "sessions", "list")[1] == {"at_exit": True}


# Whether pydantic looked for plugins (it keeps what it found in ``_plugins``), reported as the process leaves.
_PLUGINS_PROBE = """
import atexit, json, sys

def _report():
    loader = sys.modules.get("pydantic.plugin._loader")
    print(json.dumps({"looked_up": loader is not None and loader._plugins is not None}))

atexit.register(_report)
"""


def test_no_installed_package_is_asked_to_watch_validation(tmp_path: Path) -> None:
    output, seen = _probe(tmp_path, *_replay_run(tmp_path), probe=_PLUGINS_PROBE)
    assert "done" in output and seen == {"looked_up": False}


_LEAVES_WITH_A_THREAD = """
import sys, threading, time
from seepient.surfaces.cli import entry

def work():
    time.sleep(0.3)
    open(sys.argv[1], "w").write("finished")

threading.Thread(target=work).start()
entry._leave(3)
"""


def test_leaving_waits_for_a_thread_still_working_and_keeps_the_status(tmp_path: Path) -> None:
    # As the interpreter's shutdown would (a cold run and a warm-served one leave the same way).
    marker = tmp_path / "marker"
    done = subprocess.run([sys.executable, "-c", _LEAVES_WITH_A_THREAD, str(marker)], timeout=60)
    assert done.returncode == 3
    assert marker.read_text() == "finished"
