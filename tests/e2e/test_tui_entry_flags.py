"""End to end in tmux: the bare ``seepient`` (the TUI) takes ``--base-url`` and ``--config`` as ``run`` does,
and a ``--config`` file that is missing is a clear error before the screen takes over."""

from __future__ import annotations

import json
import shlex

from tests.e2e.test_tui_tmux import SEEPIENT, Tmux, exit_status
from tests.support.sse_server import Reply, SSEReplayServer


def _tui(world, flags: str, *, stderr=None) -> tuple[Tmux, object]:
    exit_file = world.home / "exit-code"
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in world.env.items())
    errors = f" 2> {shlex.quote(str(stderr))}" if stderr is not None else ""
    command = (
        f"cd {shlex.quote(str(world.workspace))} && env -i {env} TERM=xterm-256color "
        f"{shlex.quote(str(SEEPIENT))} {flags}{errors}; echo $? > {shlex.quote(str(exit_file))}; sleep 30"
    )
    return Tmux(f"sh -c {shlex.quote(command)}"), exit_file


def _one_answer(world, server: SSEReplayServer, flags: str, answer: str) -> object:
    """Open the TUI with ``flags``, send one prompt, wait for ``answer``; the one request the server saw."""
    server.queue(Reply.synthesized(answer))
    term, _ = _tui(world, flags)
    try:
        term.expect("/help for commands")
        term.send("hello", "Enter")
        term.expect(answer)
    finally:
        term.close()
    (request,) = list(server.requests)
    return request


def test_base_url_points_the_tuis_provider_at_a_local_server(world):
    with SSEReplayServer() as server:
        flags = f"--model openai:gpt-test --base-url {shlex.quote(server.base_url)}"
        request = _one_answer(world, server, flags, "Answer from the local server.")
    assert request.json()["model"] == "gpt-test"


def test_config_gives_the_tui_a_provider_from_a_settings_file(world):
    config = world.home / "extra.json"
    world.env["BOX_KEY"] = "box-key-1"
    with SSEReplayServer() as server:
        provider = {"type": "openai-chat", "baseUrl": server.base_url, "apiKeyEnv": "BOX_KEY"}
        config.write_text(json.dumps({"models": {"providers": {"box": provider}}}))
        flags = f"--model box:small --config {shlex.quote(str(config))}"
        request = _one_answer(world, server, flags, "Answer through the configured provider.")
    assert request.json()["model"] == "small"
    assert request.headers["authorization"] == "Bearer box-key-1"


def test_a_missing_config_file_is_a_clear_error(world):
    err = world.home / "stderr"
    missing = world.home / "nope.json"
    script = world.script([{"text": "never"}])
    term, exit_file = _tui(world, f"--model replay:{script} --config {shlex.quote(str(missing))}", stderr=err)
    try:
        assert exit_status(exit_file) == "2"
    finally:
        term.close()
    assert f"{missing}: no such settings file" in err.read_text()
