"""End to end: the real ``seepient run`` served by a real warm process (``surfaces/cli/warm_start/``), beside the
same run started cold. A served run must be the run the caller would have run itself: its environment, folder,
umask, exit status and signals; a caller unlike the warm process, or a command in the jail, is not served."""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import BIN, REPO
from tests.e2e.conftest import Sandboxed
from tests.e2e.test_tui_tmux import exit_status, tmux_run  # noqa: F401  (the fixture)
from tests.support.processes import process_alive
from tests.support.sse_server import Reply, SSEReplayServer


@dataclass
class Warm:
    home: Path  # short: a socket's path must fit in 100 bytes, and pytest's folders are long
    env: dict[str, str]
    server: SSEReplayServer
    workspace: Path

    @property
    def run_folder(self) -> Path:
        return self.home / "run"

    def log(self) -> str:
        return (
            "".join(p.read_text() for p in self.run_folder.glob("*.log")) if self.run_folder.exists() else ""
        )

    def served(self) -> list[int]:
        """The keeper of each run the warm process served, in order."""
        return [int(k) for k in re.findall(r"served pid \d+, keeper (\d+)", self.log())]

    def listening(self) -> list[int]:
        return [int(p) for p in re.findall(r"listening, pid (\d+)", self.log())]

    def socket(self) -> Path:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = list(self.run_folder.glob("*.sock")) if self.run_folder.exists() else []
            if found and self.listening():
                return found[0]
            time.sleep(0.05)
        raise AssertionError(f"no warm process started: {self.log()}")

    def run(self, *words: str, env: dict[str, str] | None = None, **popen: object) -> subprocess.Popen[str]:
        argv = [
            str(BIN / "seepient"),
            "run",
            "-y",
            "--model",
            "openai:test",
            "--base-url",
            self.server.base_url,
        ]
        return subprocess.Popen(
            [*argv, "--workspace", ".", *words],
            cwd=self.workspace,
            env=env or self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **{"stdin": subprocess.DEVNULL, **popen},  # type: ignore[arg-type]
        )

    def finished(self, *words: str, **kw: object) -> tuple[int, str, str]:
        proc = self.run(*words, **kw)  # type: ignore[arg-type]
        out, err = proc.communicate(timeout=120)
        return proc.returncode, out, err


@pytest.fixture
def warm(world: Sandboxed) -> Iterator[Warm]:
    home = Path(tempfile.mkdtemp(prefix="sw-", dir="/tmp"))
    env = {
        **world.env,
        "SEEPIENT_HOME": str(home),
        "SEEPIENT_WARM_START": "1",
        "SEEPIENT_WARM_IDLE_SECONDS": "120",
    }
    with SSEReplayServer() as server:
        state = Warm(home=home, env=env, server=server, workspace=world.workspace)
        try:
            yield state
        finally:
            for pid in state.listening():
                _kill(pid)
            shutil.rmtree(home, ignore_errors=True)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _gone(pid: int, within: float = 30) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return True
        time.sleep(0.05)
    return False


def _shell(command: str, index: int = 0) -> Reply:
    return Reply.synthesized(
        tool_calls=[{"name": "shell", "arguments": {"command": command}, "id": f"c{index}"}]
    )


def _start(warm: Warm) -> None:
    """A cold run, after which the warm process starts."""
    warm.server.queue(Reply.synthesized("cold"))
    status, out, err = warm.finished("say cold")
    assert status == 0, err
    warm.socket()


def _without_timings(text: str) -> str:
    return re.sub(r"\d+(\.\d+)? ?(ms|s)\b", "T", text)


def test_a_second_run_is_served_warm_and_runs_as_the_caller(warm: Warm) -> None:
    _start(warm)
    assert warm.served() == []
    # The warm process was started with none of this: the key, the umask and the folder are the caller's.
    env = {**warm.env, "OPENAI_API_KEY": "sk-the-callers-own"}
    replies = (_shell("umask; touch made; stat -c %a made", 0), Reply.synthesized("warm done"))
    warm.server.queue(*replies)
    seen = len(warm.server.requests)
    status, out, err = warm.finished("say warm", env=env, preexec_fn=lambda: os.umask(0o077))
    assert status == 0, err
    assert len(warm.served()) == 1
    assert "warm done" in out
    assert "0077" in err and "600" in err
    assert warm.server.requests[seen].headers["authorization"] == "Bearer sk-the-callers-own"
    # The same run, cold, prints the same.
    (warm.workspace / "made").unlink()
    warm.server.queue(*replies)
    cold = warm.finished(
        "say warm", env={**env, "SEEPIENT_WARM_START": "0"}, preexec_fn=lambda: os.umask(0o077)
    )
    assert cold[0] == 0 and len(warm.served()) == 1
    assert _without_timings(cold[1]) == _without_timings(out)
    assert _without_timings(cold[2]) == _without_timings(err)


def test_exit_statuses_and_errors_are_the_cold_runs(warm: Warm) -> None:
    _start(warm)
    cold_env = {**warm.env, "SEEPIENT_WARM_START": "0"}
    usage = warm.finished("--no-such-flag", "x")
    assert len(warm.served()) == 1
    assert usage[0] == 2 and warm.finished("--no-such-flag", "x", env=cold_env)[0] == 2
    # A provider that refuses: the run's own failure status and message.
    warm.server.queue(Reply.error(401, "bad key", type="invalid_request_error"))
    failed = warm.finished("say x")
    warm.server.queue(Reply.error(401, "bad key", type="invalid_request_error"))
    cold = warm.finished("say x", env=cold_env)
    assert len(warm.served()) == 2
    assert failed[0] == cold[0] != 0
    assert _without_timings(failed[2]) == _without_timings(cold[2])


def _sleeping_run(warm: Warm, marker: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    warm.server.queue(_shell(f"sleep {marker}"))  # the run is stopped before it asks again
    seen = len(warm.server.requests)
    proc = warm.run("sleep a while", env=env)
    deadline = time.monotonic() + 60
    while not _sleeper(marker):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    assert len(warm.server.requests) > seen
    return proc


def _sleeper(marker: str) -> list[int]:
    """The live ``sleep MARKER`` processes (read from /proc: procps is not on every machine)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                words = cmdline.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if words[:2] == [b"sleep", marker.encode()] and process_alive(int(entry)):
            found.append(int(entry))
    return found


def test_an_interrupt_reaches_the_run_as_it_reaches_a_cold_one(warm: Warm) -> None:
    _start(warm)
    statuses = []
    for env, marker in ((warm.env, "41.5"), ({**warm.env, "SEEPIENT_WARM_START": "0"}, "41.6")):
        proc = _sleeping_run(warm, marker, env)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        statuses.append(proc.returncode)
        assert _sleeper(marker) == [] or all(_gone(p) for p in _sleeper(marker))
    assert len(warm.served()) == 1
    assert statuses[0] == statuses[1], statuses


def test_a_caller_killed_outright_takes_its_run_and_jail_with_it(warm: Warm) -> None:
    _start(warm)
    proc = _sleeping_run(warm, "42.5")
    (keeper,) = warm.served()
    sleepers = _sleeper("42.5")
    proc.kill()
    proc.communicate(timeout=30)
    assert _gone(keeper)
    assert all(_gone(pid) for pid in sleepers)
    # The warm process itself is untouched and serves the next run.
    warm.server.queue(Reply.synthesized("again"))
    status, out, _ = warm.finished("again")
    assert status == 0 and "again" in out and len(warm.served()) == 2


def test_a_command_in_the_jail_cannot_reach_the_warm_process(warm: Warm) -> None:
    _start(warm)
    path = warm.socket()
    connect = "import socket; s = socket.socket(socket.AF_UNIX); s.connect({}); print('REACHED' + '-IT')"
    # Named outright, the socket is a path policy refuses before anything runs...
    warm.server.queue(_shell(f'python3 -c "{connect.format(repr(str(path)))}"'), Reply.synthesized("refused"))
    status, out, err = warm.finished("try it")
    assert status == 0, err
    assert "names a refused path" in err and "REACHED-IT" not in err
    # ...and disguised, it runs in the jail, which shows no Seepient home at all.
    encoded = base64.b64encode(str(path).encode()).decode()
    disguised = connect.format(f"__import__('base64').b64decode('{encoded}').decode()")
    warm.server.queue(_shell(f'python3 -c "{disguised}"'), Reply.synthesized("tried"))
    status, out, err = warm.finished("try it")
    assert status == 0, err
    assert "REACHED-IT" not in err + out
    assert "FileNotFoundError" in err, err
    assert len(warm.served()) == 2  # the runs themselves, and nothing the commands did


# A caller that connects and reads the warm process's first word: a refusal, or the hello of one it serves.
_PROBE = """
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(sys.argv[1])
head = s.recv(4)
word = json.loads(s.recv(struct.unpack(">I", head)[0]))
print("HEARD" if word.get("hello") else word.get("refused", "?"))
"""


def _probe(path: Path, *wrapper: str) -> str:
    done = subprocess.run(
        [*wrapper, "/usr/bin/python3", "-c", _PROBE, str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# In CI (which runs as root) the attack must run: there a missing privilege fails instead of skipping.
@pytest.mark.skipif(
    os.geteuid() != 0 and os.environ.get("CI") != "true",
    reason="the other callers are made with unshare and setpriv, which need root",
)
def test_callers_unlike_the_warm_process_are_refused(warm: Warm) -> None:
    _start(warm)
    path = warm.socket()
    assert _probe(path) == "HEARD"  # the control: a caller like it is heard
    for wrapper in (["setpriv", "--no-new-privs"], ["unshare", "--mount"], ["unshare", "--net"]):
        assert "another namespace" in _probe(path, *wrapper), wrapper
    # Another user: the folder keeps them out; opened up here to show the warm process's own check holds too.
    for folder in (path.parent.parent, path.parent):
        os.chmod(folder, 0o711)
    os.chmod(path, 0o666)
    try:
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        assert _probe(path, *nobody) == "another user"
    finally:
        os.chmod(path, 0o600)
        for folder in (path.parent.parent, path.parent):
            os.chmod(folder, 0o700)
    # Only the control got a keeper, which left when the probe did, without a run.
    (keeper,) = warm.served()
    assert _gone(keeper)
    assert warm.log().count("refused pid") == 4


def test_a_run_from_an_opened_up_folder_starts_cold(warm: Warm) -> None:
    _start(warm)
    os.chmod(warm.run_folder, 0o755)
    warm.server.queue(Reply.synthesized("cold again"))
    status, out, _ = warm.finished("x")
    assert status == 0 and "cold again" in out
    assert warm.served() == []


def test_the_warm_process_leaves_when_idle_and_when_its_socket_is_gone(warm: Warm) -> None:
    warm.env["SEEPIENT_WARM_IDLE_SECONDS"] = "1"
    _start(warm)
    (pid,) = warm.listening()
    assert _gone(pid)
    assert list(warm.run_folder.glob("*.sock")) == []
    assert "idle; leaving" in warm.log()
    warm.env["SEEPIENT_WARM_IDLE_SECONDS"] = "120"
    _start(warm)
    second = warm.listening()[-1]
    warm.socket().unlink()
    assert _gone(second)
    assert "the socket was removed" in warm.log()


def test_a_second_warm_process_for_the_same_name_leaves_at_once(warm: Warm) -> None:
    _start(warm)
    (first,) = warm.listening()
    key = warm.socket().stem
    env = {k: v for k, v in warm.env.items() if k.startswith(("PYTHON", "LC_", "LANG", "SEEPIENT_", "HOME"))}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "seepient.surfaces.cli.warm_start.server", key],
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert warm.listening() == [first] and process_alive(first)


def test_a_warm_process_asked_for_another_name_does_not_serve(warm: Warm) -> None:
    env = {k: v for k, v in warm.env.items() if k.startswith(("PYTHON", "LC_", "LANG", "SEEPIENT_", "HOME"))}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "seepient.surfaces.cli.warm_start.server", "0" * 32],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert "not the one asked for" in done.stderr
    assert not (warm.run_folder / f"{'0' * 32}.sock").exists()


def test_no_warm_process_is_left_behind_without_a_terminal(warm: Warm) -> None:
    env = {k: v for k, v in warm.env.items() if k != "SEEPIENT_WARM_START"}
    warm.server.queue(Reply.synthesized("scripted"))
    status, _, _ = warm.finished("x", env=env)
    assert status == 0
    assert not list(warm.run_folder.glob("*.sock")) if warm.run_folder.exists() else True
    assert json.dumps(warm.listening()) == "[]"


def test_a_warm_process_too_slow_to_answer_means_one_cold_run_and_no_second(warm: Warm) -> None:
    _start(warm)
    (pid,) = warm.listening()
    os.kill(pid, signal.SIGSTOP)
    try:
        warm.server.queue(Reply.synthesized("ran once"))
        seen = len(warm.server.requests)
        status, out, _ = warm.finished("once")
        assert status == 0 and "ran once" in out
    finally:
        os.kill(pid, signal.SIGCONT)
    # The caller gave up before it handed anything over; the warm process, going on, serves the next run only.
    warm.server.queue(Reply.synthesized("warm again"))
    status, out, _ = warm.finished("again")
    assert status == 0 and "warm again" in out
    assert len(warm.served()) == 1
    assert len(warm.server.requests) == seen + 2


def test_the_tui_is_served_warm_and_draws_answers_and_resizes(warm: Warm, world: Sandboxed, tmux_run) -> None:  # noqa: F811
    script = world.script(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "n\n"}}]},
            {"text": "Noted warmly."},
        ]
    )
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in warm.env.items())
    exit_file = world.home / "exit-code"

    def tui() -> str:
        exit_file.unlink(missing_ok=True)
        command = (
            f"cd {shlex.quote(str(world.workspace))} && env -i {env} TERM=xterm-256color "
            f"{shlex.quote(str(BIN / 'seepient'))} --model {shlex.quote(f'replay:{script}')}; "
            f"echo $? > {shlex.quote(str(exit_file))}; sleep 30"
        )
        return f"sh -c {shlex.quote(command)}"

    cold = tmux_run(tui())  # on a terminal, the cold TUI leaves the warm process behind as it ends
    cold.expect(f"workspace {world.workspace}")
    cold.quit()
    assert exit_status(exit_file) == "0"
    warm.socket()
    term = tmux_run(tui())
    term.expect(f"workspace {world.workspace}")
    assert len(warm.served()) == 1
    term.send("-l", "take a note")
    term.send("Enter")
    term.expect("notes.txt")  # the approval, drawn from the caller's terminal
    term.send("y")
    term.expect("Noted warmly.")
    assert (world.workspace / "notes.txt").read_text() == "n\n"
    # A resize reaches the run (SIGWINCH is the caller's, passed on): the footer is drawn anew at the new width.
    term._tmux("resize-window", "-t", "tui:main", "-x", "60", "-y", "20")
    deadline = time.monotonic() + 30
    while max(len(line) for line in term.screen().splitlines() or [""]) > 60:
        assert time.monotonic() < deadline, term.screen()
        time.sleep(0.1)
    term.expect("esc back")
    term.quit()
    assert exit_status(exit_file) == "0"


# A caller of its own making: it hands over a request and prints the answer, then leaves without its "go".
_ASKS = """
import json, os, socket, sys
from seepient.surfaces.cli.warm_start.wire import receive_frame, send_frame
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
receive_frame(s)
request = {"argv": json.loads(sys.argv[2]), "environ": dict(os.environ), "umask": 0o022, "limits": {}}
fds = [0, 1, 2, os.open(".", os.O_RDONLY)][: int(sys.argv[3])]
send_frame(s, request, fds)
print(json.dumps(receive_frame(s)[0]))
"""


def _ask(warm: Warm, argv: list[str], descriptors: int = 4) -> dict[str, object]:
    """The warm process's answer to a request; its keeper must then leave."""
    done = subprocess.run(
        [sys.executable, "-c", _ASKS, str(warm.socket()), json.dumps(argv), str(descriptors)],
        cwd=warm.workspace,
        env=warm.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    (keeper,) = warm.served()
    assert _gone(keeper)
    return json.loads(done.stdout)


def test_a_caller_that_never_says_go_gets_no_run(warm: Warm) -> None:
    _start(warm)
    warm.server.queue(Reply.synthesized("should not run"))
    seen = len(warm.server.requests)
    argv = ["seepient", "run", "-y", "--model", "openai:test", "--base-url", warm.server.base_url, "hi"]
    assert _ask(warm, argv) == {"ready": True}
    assert len(warm.server.requests) == seen


@pytest.mark.parametrize(
    ("argv", "descriptors", "why"),
    [
        (["seepient", "serve", "--port", "1"], 4, "neither a run nor the TUI"),
        (["seepient", "sandbox", "run", "--", "id"], 4, "neither a run nor the TUI"),
        (["seepient", "--model", "m", "doctor"], 4, "neither a run nor the TUI"),
        (["seepient", "run", "hi"], 2, "four descriptors"),
    ],
)
def test_the_warm_process_serves_nothing_but_a_run_or_the_tui(warm: Warm, argv, descriptors, why) -> None:
    _start(warm)
    assert why in str(_ask(warm, argv, descriptors)["refused"])


def test_a_prompt_on_standard_input_reaches_a_warm_run(warm: Warm) -> None:
    _start(warm)
    warm.server.queue(Reply.synthesized("read it"))
    seen = len(warm.server.requests)
    proc = warm.run(stdin=subprocess.PIPE)
    out, err = proc.communicate("the prompt came through a pipe\n", timeout=120)
    assert proc.returncode == 0, err
    assert "read it" in out and len(warm.served()) == 1
    assert "the prompt came through a pipe" in json.dumps(warm.server.requests[seen].json())


def test_an_output_closed_early_ends_a_warm_run_as_a_cold_one(warm: Warm) -> None:
    _start(warm)
    statuses = []
    for env in (warm.env, {**warm.env, "SEEPIENT_WARM_START": "0"}):
        warm.server.queue(Reply.synthesized("word " * 40_000))  # more than a pipe holds
        proc = warm.run("talk", env=env)
        assert proc.stdout is not None and proc.stdout.read(1)
        proc.stdout.close()
        proc.communicate(timeout=120)
        statuses.append(proc.returncode)
    assert len(warm.served()) == 1
    assert statuses[0] == statuses[1], statuses
