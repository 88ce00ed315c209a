"""The warm start's parts that need no running warm process: whether one may be used, the private folder, what
its name is a digest of, the frames, and what loading the run path leaves behind in a process about to fork
runs for other callers (``tests/e2e/test_warm_start.py`` drives the real thing)."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from seepient.surfaces.cli.warm_start import place
from seepient.surfaces.cli.warm_start.wire import MAX_FRAME, WireError, receive_frame, send_frame
from tests.conftest import REPO
from tests.support.cli_probe import probe_cli
from tests.support.sse_server import Reply, SSEReplayServer


def _settings(path: Path, warm: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"runtime": {"warmStart": warm}}))


def test_a_warm_start_is_chosen_unless_switched_off(tmp_path: Path) -> None:
    managed = tmp_path / "managed.json"
    env = {"SEEPIENT_HOME": str(tmp_path / "home"), "SEEPIENT_MANAGED_SETTINGS": str(managed)}
    assert place.chosen(env)
    assert not place.chosen({**env, "SEEPIENT_WARM_START": "0"})
    _settings(tmp_path / "home" / "settings.json", False)
    assert not place.chosen(env)
    # The managed file's word is the last: it can forbid what the user allows, and allow what the user did not.
    _settings(tmp_path / "home" / "settings.json", True)
    _settings(managed, False)
    assert not place.chosen(env)
    _settings(managed, True)
    _settings(tmp_path / "home" / "settings.json", False)
    assert place.chosen(env)


def test_the_files_are_where_the_settings_loader_finds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One reading of the variables for both (``seepient._locations``): a managed file named with ``~`` is the
    # same file to the client as to the cold start, which would otherwise honour a "no" the client missed.
    from seepient.config.paths import SeepientPaths
    from seepient.config.settings import managed_settings_path

    monkeypatch.setenv("HOME", str(tmp_path))
    env = {"SEEPIENT_MANAGED_SETTINGS": "~/managed.json", "SEEPIENT_HOME": "~/sh"}
    _settings(tmp_path / "managed.json", False)
    assert managed_settings_path(env) == tmp_path / "managed.json"
    assert not place.chosen(env)
    assert place.private_folder(env, create=True) == str(SeepientPaths.from_env(env).home / "run")


def test_a_settings_file_it_cannot_read_means_a_cold_start(tmp_path: Path) -> None:
    # The cold start reports the broken file as it always does; the warm one must not hide it.
    env = {"SEEPIENT_HOME": str(tmp_path), "SEEPIENT_MANAGED_SETTINGS": str(tmp_path / "none.json")}
    (tmp_path / "settings.json").write_text("{not json")
    assert not place.chosen(env)
    (tmp_path / "settings.json").write_text("[1, 2]")
    assert not place.chosen(env)
    (tmp_path / "settings.json").write_text(json.dumps({"runtime": {"warmStart": "yes"}}))
    assert place.chosen(env)  # not a boolean: the schema refuses it at load; here it says nothing


def test_the_settings_schema_knows_the_key() -> None:
    from seepient.config.settings import Settings

    assert Settings.model_validate({"runtime": {"warmStart": False}}).runtime.warm_start is False
    assert Settings().runtime.warm_start is True


def test_the_private_folder_is_made_private_and_refused_otherwise(tmp_path: Path) -> None:
    env = {"SEEPIENT_HOME": str(tmp_path / "home")}
    assert place.private_folder(env, create=False) is None
    folder = place.private_folder(env, create=True)
    assert folder == str(tmp_path / "home" / "run")
    assert os.stat(folder).st_mode & 0o777 == 0o700
    os.chmod(folder, 0o755)
    assert place.private_folder(env, create=True) is None
    os.chmod(folder, 0o700)
    if os.geteuid() == 0:
        os.chown(folder, 65534, 65534)
        assert place.private_folder(env, create=True) is None
        os.chown(folder, 0, 0)
    os.rmdir(folder)
    # A symlink to a folder that is private is still someone's arrangement, not ours.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    os.symlink(elsewhere, folder)
    assert place.private_folder(env, create=True) is None
    assert place.private_folder(env, create=False) is None


def test_a_home_too_long_for_a_socket_gets_no_warm_start(tmp_path: Path) -> None:
    assert place.socket_path(str(tmp_path / ("x" * 120)), "k" * 32) is None
    assert place.socket_path("/home/someone/.seepient/run", "k" * 32) is not None


def test_the_name_follows_the_code_and_the_startup_environment_only(tmp_path: Path) -> None:
    package = tmp_path / "package"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "module.py").write_text("x = 1\n")
    env = {"LANG": "C.UTF-8", "OPENAI_API_KEY": "one", "HOME": "/home/a"}
    key = place.server_key(env, str(package))
    assert place.server_key(env, str(package)) == key
    # A caller's own values (keys, home, anything a run reads for itself) are handed over, not part of the name.
    assert place.server_key({**env, "OPENAI_API_KEY": "two", "HOME": "/home/b"}, str(package)) == key
    # What the interpreter or Typer read as they start is.
    assert place.server_key({**env, "LANG": "de_DE.UTF-8"}, str(package)) != key
    assert place.server_key({**env, "PYTHONHASHSEED": "1"}, str(package)) != key
    assert place.server_key({**env, "TYPER_USE_RICH": "0"}, str(package)) != key
    # An edit of one file in a working copy is other code.
    stamp = os.stat(package / "sub" / "module.py").st_mtime_ns
    os.utime(package / "sub" / "module.py", ns=(stamp + 10**9, stamp + 10**9))
    assert place.server_key(env, str(package)) != key
    edited = place.server_key(env, str(package))
    (package / "sub" / "new.py").write_text("")
    assert place.server_key(env, str(package)) != edited


# In CI (which runs as root) the check must run: there a missing privilege fails instead of skipping.
@pytest.mark.skipif(
    os.geteuid() != 0 and os.environ.get("CI") != "true", reason="unshare and setpriv need root here"
)
def test_another_namespace_or_confinement_is_another_name() -> None:
    code = (
        "import os; from seepient.surfaces.cli.warm_start import place; print(place.server_key(os.environ))"
    )
    here = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    for wrapper in (["unshare", "--mount"], ["unshare", "--uts"], ["setpriv", "--no-new-privs"]):
        other = subprocess.run(
            [*wrapper, sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
        )
        assert other.stdout != here.stdout, wrapper


def _pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


def test_frames_carry_an_object_and_descriptors() -> None:
    left, right = _pair()
    with left, right:
        read, write = os.pipe()
        send_frame(left, {"argv": ["seepient", "run", "\udcff"], "n": 1}, [read])
        message, descriptors = receive_frame(right, with_descriptors=True)
        assert message == {"argv": ["seepient", "run", "\udcff"], "n": 1}
        os.write(write, b"through")
        assert os.read(descriptors[0], 7) == b"through"
        for fd in (read, write, *descriptors):
            os.close(fd)


@pytest.mark.parametrize(
    "raw",
    [
        struct.pack(">I", MAX_FRAME + 1),  # a length no caller sends
        struct.pack(">I", 10) + b"{}",  # cut short
        struct.pack(">I", 2) + b"[]",  # not an object
        struct.pack(">I", 3) + b"{x}",  # not JSON
    ],
)
def test_a_bad_frame_is_refused(raw: bytes) -> None:
    left, right = _pair()
    with left, right:
        left.sendall(raw)
        left.shutdown(socket.SHUT_WR)
        with pytest.raises((WireError, ValueError)):
            receive_frame(right)


def test_an_end_before_a_frame_is_an_end() -> None:
    left, right = _pair()
    with left, right:
        left.shutdown(socket.SHUT_WR)
        with pytest.raises(EOFError):
            receive_frame(right)


# What the warm process holds once it has loaded the run path, reported from a fresh interpreter.
_AFTER_PRELOAD = """
import functools, json, sys, tempfile, threading
from seepient.surfaces.cli.warm_start import server
server._preload()
filled = sorted(
    f"{name}.{attr}"
    for name, module in list(sys.modules.items()) if name.startswith("seepient")
    for attr, value in vars(module).items()
    if isinstance(value, functools._lru_cache_wrapper) and value.cache_info().currsize and value.__module__ == name
)
print(json.dumps({
    "threads": threading.active_count(),
    "filled": filled,
    "tempdir": tempfile.tempdir,
    "modules": sorted(m for m in sys.modules if m.startswith("seepient")),
}))
"""
# Pure functions of their argument (a path's spelling to its comparison keys), filled from the package's own
# table of sensitive paths as it loads: the same in every process.
_PURE_CACHES = {"seepient.policy.sensitive.path_keys"}


def _after_preload() -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _AFTER_PRELOAD],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_loading_the_run_path_starts_no_thread_and_reads_nothing_of_a_caller() -> None:
    # A fork keeps only the forking thread; and anything remembered from the warm process's own environment,
    # folder or home (a cache filled, the temporary folder chosen) would be every later caller's.
    after = _after_preload()
    assert after["threads"] == 1
    assert set(after["filled"]) <= _PURE_CACHES, after["filled"]
    assert after["tempdir"] is None


_MODULES_AT_EXIT = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(m for m in sys.modules if m.startswith("seepient")))))
"""


def test_the_warm_process_loads_every_module_a_run_loads(tmp_path: Path) -> None:
    # A module the preload misses is loaded in every warm run again: the warm start's figure would creep back.
    (tmp_path / "ws").mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OPENAI_API_KEY": "k", "SEEPIENT_WARM_START": "0"}
    with SSEReplayServer() as server:
        server.queue(Reply.synthesized("done"), Reply.synthesized("done"))
        argv = ["run", "-y", "--model", "openai:test", "--base-url", server.base_url]
        argv += ["--workspace", str(tmp_path / "ws"), "say done"]
        probe_cli(_MODULES_AT_EXIT, argv, env=env, cwd=REPO)  # the first run makes the home's database
        _, loaded = probe_cli(_MODULES_AT_EXIT, argv, env=env, cwd=REPO)
    missing = set(loaded) - set(_after_preload()["modules"])
    assert missing == set(), sorted(missing)


def test_the_client_loads_little(tmp_path: Path) -> None:
    # The client is all a warm run pays for at start: no typing, pathlib or OpenSSL, and nothing of the runtime.
    code = (
        "import sys, json; import seepient.surfaces.cli.entry, seepient.surfaces.cli.warm_start.client; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    loaded = set(json.loads(done.stdout))
    assert not loaded & {"typing", "pathlib", "_hashlib", "pydantic", "typer", "seepient.runtime"}
