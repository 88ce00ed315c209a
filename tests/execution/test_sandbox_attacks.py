"""Attacks on the bubblewrap sandbox through the real LocalExecutor: each test is something a hostile
command would try, run under real bwrap, with the host checked afterwards."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from seepient.execution.jail import run_sandboxed
from seepient.execution.local import LocalExecutor
from seepient.execution.sandbox.bwrap import BwrapSandbox
from seepient.protocol import Capability, SandboxUnavailable, ShellCommand, ShellOutcome
from tests.approved import run_shell
from tests.execution.exec_helpers import (
    SECRET_ENV,
    SSH_MARKER,
    unique_sleep_seconds,
    wait_for_pids,
    wait_until_gone,
)


async def shell(
    executor: LocalExecutor, command: str, *, timeout_ms: int = 30_000, network: bool = False
) -> ShellOutcome:
    capabilities = (Capability.NETWORK,) if network else ()
    return await run_shell(
        executor,
        ShellCommand(
            command=command, cwd=str(executor.workspace), timeout_ms=timeout_ms, capabilities=capabilities
        ),
    )


@pytest.fixture(autouse=True)
def _bwrap_works() -> None:
    status = BwrapSandbox().probe()
    assert status.available, f"these tests need a working bubblewrap: {status.message}"


async def test_writes_inside_the_workspace_land_on_the_host(executor: LocalExecutor, workspace: Path) -> None:
    outcome = await shell(executor, "mkdir -p sub && echo made-inside > sub/out.txt && cat sub/out.txt")
    assert outcome.exit_code == 0, outcome.stderr
    assert outcome.sandbox == "bwrap"
    assert outcome.stdout == "made-inside\n"
    assert (workspace / "sub" / "out.txt").read_text() == "made-inside\n"


async def test_writes_outside_the_workspace_fail_and_leave_nothing(
    executor: LocalExecutor, outside_dir: Path, fake_home: Path
) -> None:
    for target in (outside_dir / "escaped.txt", Path("/etc/seepient-attack"), Path("/usr/seepient-attack")):
        outcome = await shell(executor, f"echo pwned > {target}")
        assert outcome.exit_code != 0, f"writing {target} succeeded"
        assert "Read-only file system" in outcome.stderr
        assert not target.exists()


async def test_a_home_in_the_jail_is_a_throwaway_folder(executor: LocalExecutor, fake_home: Path) -> None:
    """Homes are replaced by an empty tmpfs: a write there succeeds (caches work) and is gone with the command."""
    real_home_target = Path("/root") / f"seepient-attack-{os.getpid()}"
    for target in (fake_home / "escaped.txt", fake_home / ".bashrc", real_home_target):
        outcome = await shell(executor, f"echo pwned > {target} && cat {target}")
        assert outcome.stdout == "pwned\n", outcome.stderr
        assert not target.exists()
    again = await shell(executor, f"cat {fake_home / 'escaped.txt'}")
    assert again.exit_code != 0


async def test_writes_to_a_host_temp_dir_outside_the_workspace_stay_in_the_private_tmp(
    executor: LocalExecutor, tmp_path: Path
) -> None:
    host_dir = tmp_path / "outside-ws"
    host_dir.mkdir()
    (host_dir / "host-only.txt").write_text("host file")
    outcome = await shell(
        executor,
        f"ls {host_dir} 2>&1; mkdir -p {host_dir} && echo pwned > {host_dir}/escaped.txt && echo wrote; ls /tmp",
    )
    assert outcome.exit_code == 0, outcome.stderr
    assert "host-only.txt" not in outcome.stdout
    assert not (host_dir / "escaped.txt").exists()
    assert sorted(p.name for p in host_dir.iterdir()) == ["host-only.txt"]


async def test_ssh_keys_and_other_credentials_are_invisible(executor: LocalExecutor, fake_home: Path) -> None:
    outcome = await shell(
        executor,
        "cat ~/.ssh/id_rsa ~/.aws/credentials ~/.netrc ~/.seepient/audit.log; ls -A ~/.ssh ~/.aws ~/.seepient;"
        " grep -r PRIVATE ~ ; cat ~/notes.txt",
    )
    assert SSH_MARKER not in outcome.stdout + outcome.stderr
    assert "ordinary file" not in outcome.stdout  # the rest of the home is hidden as well
    assert (fake_home / ".ssh" / "id_rsa").read_text().count(SSH_MARKER) == 1


async def test_symlink_from_the_workspace_to_a_hidden_secret_reads_nothing(
    executor: LocalExecutor, workspace: Path, fake_home: Path
) -> None:
    (workspace / "innocent.txt").symlink_to(fake_home / ".ssh" / "id_rsa")
    outcome = await shell(executor, "cat innocent.txt")
    assert SSH_MARKER not in outcome.stdout


async def test_environment_holds_no_secret(executor: LocalExecutor, fake_home: Path) -> None:
    outcome = await shell(executor, "env; cat /proc/self/environ | tr '\\0' '\\n'")
    assert outcome.exit_code == 0, outcome.stderr
    for name, value in SECRET_ENV.items():
        assert name not in outcome.stdout
        assert value not in outcome.stdout
    assert f"HOME={fake_home}" in outcome.stdout


async def _listener() -> tuple[asyncio.Server, int, list[int]]:
    accepted: list[int] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, port, accepted


async def test_network_is_cut_unless_asked(executor: LocalExecutor) -> None:
    server, port, accepted = await _listener()
    try:
        connect = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
        denied = await shell(executor, connect)
        assert denied.exit_code != 0
        assert "connected" not in denied.stdout
        assert accepted == []

        allowed = await shell(executor, connect, network=True)
        assert allowed.exit_code == 0, allowed.stderr
        assert "connected" in allowed.stdout
        for _ in range(500):
            if accepted:
                break
            await asyncio.sleep(0.01)
        assert accepted == [1]
    finally:
        server.close()
        await server.wait_closed()


def _unix_listener(path: Path) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    listener.setblocking(False)
    return listener


def _connect_unix(path: Path) -> str:
    # The real interpreter, not the venv's link to it: the checkout (and its .venv) may live under /tmp,
    # which the sandbox replaces with a private one.
    python = os.path.realpath(sys.executable)
    return f"{python} -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(\"connected\")' {path}"


async def test_host_sockets_under_run_and_the_agent_socket_are_unreachable(
    workspace: Path, fake_home: Path, outside_dir: Path, parent_environ: dict[str, str]
) -> None:
    # Filesystem sockets ignore network namespaces: a docker.sock or an ssh-agent socket reachable from
    # inside would hand the host over. One socket lives under /run, one is named by SSH_AUTH_SOCK.
    run_socket = Path(f"/run/seepient-test-{os.getpid()}.sock")
    agent_socket = outside_dir / "agent.sock"
    workspace_socket = workspace / "ws.sock"
    listeners = [_unix_listener(run_socket), _unix_listener(agent_socket), _unix_listener(workspace_socket)]
    try:
        environ = {**parent_environ, "SSH_AUTH_SOCK": str(agent_socket)}
        executor = LocalExecutor(
            workspace, seepient_home=fake_home / ".seepient", home=fake_home, environ=environ
        )
        # The connecting command itself works inside the sandbox: it reaches a socket in the workspace.
        control = await shell(executor, _connect_unix(workspace_socket))
        assert control.stdout.strip() == "connected", control.stderr
        for target in (run_socket, agent_socket):
            outcome = await shell(executor, _connect_unix(target), network=True)
            assert outcome.exit_code != 0, f"connected to {target}"
            assert "connected" not in outcome.stdout
            with pytest.raises(BlockingIOError):
                listeners[0 if target == run_socket else 1].accept()
        # The same command reaches the socket without the sandbox, so the refusal above is the sandbox's doing.
        host = subprocess.run(_connect_unix(agent_socket), shell=True, capture_output=True, text=True)
        assert host.stdout.strip() == "connected"
    finally:
        for listener in listeners:
            listener.close()
        run_socket.unlink(missing_ok=True)


async def test_tmp_is_private(executor: LocalExecutor, tmp_path: Path) -> None:
    marker = Path("/tmp") / f"seepient-host-marker-{os.getpid()}"
    marker.write_text("host")
    try:
        outcome = await shell(
            executor, f"cat {marker}; echo inside > /tmp/sandbox-only-{os.getpid()} && echo ok"
        )
        assert "host" not in outcome.stdout
        assert "ok" in outcome.stdout
        assert not Path(f"/tmp/sandbox-only-{os.getpid()}").exists()
    finally:
        marker.unlink()


async def test_project_settings_cannot_be_written_or_created(
    executor: LocalExecutor, workspace: Path
) -> None:
    attack = (
        'echo \'{"permissions":{"allow":["Bash(*)"]}}\' > .seepient/settings.json;'
        " rm -rf .seepient; mv .seepient .elsewhere; ls -A .seepient"
    )
    outcome = await shell(executor, attack)
    assert "Read-only file system" in outcome.stderr
    assert not (workspace / ".seepient" / "settings.json").exists()
    assert not (workspace / ".elsewhere").exists()
    assert (workspace / ".seepient").is_dir()


async def test_existing_project_settings_cannot_be_changed(executor: LocalExecutor, workspace: Path) -> None:
    (workspace / ".seepient").mkdir()
    settings = workspace / ".seepient" / "settings.json"
    settings.write_text('{"permissions": {"deny": ["Bash(curl *)"]}}')
    before = settings.read_bytes()
    outcome = await shell(
        executor,
        "echo '{}' > .seepient/settings.json; rm -f .seepient/settings.json; truncate -s0 .seepient/settings.json",
    )
    assert outcome.exit_code != 0
    assert settings.read_bytes() == before


def _git(workspace: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True, text=True).stdout


async def test_git_hooks_and_config_are_read_only_but_git_still_works(
    executor: LocalExecutor, workspace: Path
) -> None:
    _git(workspace, "init", "-q")
    config_before = (workspace / ".git" / "config").read_bytes()
    (workspace / "a.txt").write_text("one\n")
    attack = (
        "printf '#!/bin/sh\\necho owned > /tmp/owned\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit;"
        " git config core.fsmonitor 'touch /tmp/owned';"
        " git config core.hooksPath /tmp;"
        " mv .git .git-moved; rm -rf .git/hooks;"
        " ls .git/hooks > /dev/null"
    )
    outcome = await shell(executor, attack)
    assert outcome.exit_code == 0, outcome.stderr  # the last command: .git/hooks is still there
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / ".git" / "config").read_bytes() == config_before
    assert not (workspace / ".git-moved").exists()

    work = await shell(
        executor,
        "echo two >> a.txt && git add a.txt && git -c user.name=t -c user.email=t@example.com commit -qm change && git log --oneline | wc -l",
    )
    assert work.exit_code == 0, work.stderr
    assert work.stdout.strip() == "1"
    assert "change" in _git(workspace, "log", "--oneline")


async def test_a_separate_git_dir_is_protected_through_the_git_file(
    executor: LocalExecutor, workspace: Path
) -> None:
    _git(workspace, "init", "-q", f"--separate-git-dir={workspace / '.realgit'}")
    assert (workspace / ".git").is_file()
    pointer = (workspace / ".git").read_bytes()
    config_before = (workspace / ".realgit" / "config").read_bytes()
    attack = (
        "echo 'gitdir: /tmp/evil' > .git; echo hook > .realgit/hooks/post-checkout;"
        " git config core.fsmonitor 'touch /tmp/owned'"
    )
    await shell(executor, attack)
    assert (workspace / ".git").read_bytes() == pointer
    assert not (workspace / ".realgit" / "hooks" / "post-checkout").exists()
    assert (workspace / ".realgit" / "config").read_bytes() == config_before
    (workspace / "a.txt").write_text("a\n")
    work = await shell(
        executor, "git add a.txt && git -c user.name=t -c user.email=t@example.com commit -qm first"
    )
    assert work.exit_code == 0, work.stderr


async def test_symlinked_git_hooks_are_protected_at_both_ends(
    executor: LocalExecutor, workspace: Path
) -> None:
    _git(workspace, "init", "-q")
    (workspace / ".git" / "hooks").rename(workspace / "githooks")
    (workspace / ".git" / "hooks").symlink_to("../githooks")
    attack = (
        "echo hook > githooks/pre-commit; echo hook > .git/hooks/pre-commit;"
        " rm .git/hooks; mkdir .git/hooks; echo hook > .git/hooks/pre-commit"
    )
    await shell(executor, attack)
    assert not (workspace / "githooks" / "pre-commit").exists()
    assert (workspace / ".git" / "hooks").is_symlink()
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()


async def test_timeout_kills_the_whole_process_tree(executor: LocalExecutor) -> None:
    seconds = unique_sleep_seconds()
    task = asyncio.create_task(shell(executor, f"sh -c 'sleep {seconds} & wait' & wait", timeout_ms=1_500))
    pids = await asyncio.to_thread(wait_for_pids, "sleep", seconds)
    outcome = await task
    survivors = await asyncio.to_thread(wait_until_gone, pids)
    for pid in survivors:
        os.kill(pid, 9)
    assert outcome.timed_out
    assert outcome.exit_code is None
    assert survivors == []


async def test_cancelling_the_task_kills_the_sandboxed_tree(executor: LocalExecutor) -> None:
    seconds = unique_sleep_seconds()
    task = asyncio.create_task(shell(executor, f"sh -c 'sleep {seconds} & wait' & wait"))
    pids = await asyncio.to_thread(wait_for_pids, "sleep", seconds)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    survivors = await asyncio.to_thread(wait_until_gone, pids)
    for pid in survivors:
        os.kill(pid, 9)
    assert survivors == []


async def _background_child_dies_on_exit(executor: LocalExecutor, workspace: Path) -> None:
    seconds = unique_sleep_seconds()
    # The command leaves a detached-looking child behind and exits once the test has seen that child.
    command = f"sleep {seconds} > /dev/null 2>&1 & while [ ! -e go ]; do sleep 0.02; done; echo finished"
    task = asyncio.create_task(shell(executor, command))
    pids = await asyncio.to_thread(wait_for_pids, "sleep", seconds)
    (workspace / "go").touch()
    outcome = await task
    survivors = await asyncio.to_thread(wait_until_gone, pids)
    for pid in survivors:
        os.kill(pid, 9)
    assert outcome.exit_code == 0 and outcome.stdout == "finished\n"
    assert survivors == []


async def test_background_children_die_with_the_command(executor: LocalExecutor, workspace: Path) -> None:
    await _background_child_dies_on_exit(executor, workspace)


async def test_background_children_die_with_the_command_without_sandbox(
    make_executor: Callable[..., LocalExecutor], workspace: Path
) -> None:
    executor = make_executor(sandbox="off")
    await _background_child_dies_on_exit(executor, workspace)


async def test_output_is_capped_without_blocking_the_child(
    make_executor: Callable[..., LocalExecutor], workspace: Path
) -> None:
    executor = make_executor(max_output_bytes=1000)
    outcome = await shell(
        executor,
        "head -c 5000000 /dev/zero | tr '\\0' a; head -c 3000000 /dev/zero | tr '\\0' b >&2; echo done >&2",
    )
    assert outcome.exit_code == 0
    assert outcome.stdout == "a" * 1000
    assert outcome.stderr == "b" * 1000
    assert outcome.stdout_truncated and outcome.stderr_truncated


async def test_invalid_utf8_output_is_replaced_not_fatal(executor: LocalExecutor) -> None:
    outcome = await shell(executor, "printf 'ok \\377\\376 end'")
    assert outcome.exit_code == 0
    assert outcome.stdout == "ok \ufffd\ufffd end"


async def test_exit_codes_pass_through(executor: LocalExecutor) -> None:
    outcome = await shell(executor, "echo out; echo err >&2; exit 7")
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (7, "out\n", "err\n")


async def test_missing_bubblewrap_refuses_with_the_fix(
    make_executor: Callable[..., LocalExecutor], workspace: Path
) -> None:
    executor = make_executor(bwrap=BwrapSandbox(str(workspace / "no-such-bwrap")))
    with pytest.raises(SandboxUnavailable) as caught:
        await shell(executor, "echo should-not-run > ran.txt")
    assert "apt-get install bubblewrap" in str(caught.value)
    assert "--sandbox off" in str(caught.value)
    assert not (workspace / "ran.txt").exists()


async def test_a_bwrap_that_cannot_start_refuses_with_the_fix(
    make_executor: Callable[..., LocalExecutor], workspace: Path
) -> None:
    # /bin/false stands in for a bwrap that the kernel stops: it exits non-zero before running anything.
    executor = make_executor(bwrap=BwrapSandbox("/bin/false"))
    with pytest.raises(SandboxUnavailable) as caught:
        await shell(executor, "echo should-not-run > ran.txt")
    assert "--sandbox off" in str(caught.value)
    assert not (workspace / "ran.txt").exists()


async def test_a_first_command_that_succeeds_needs_no_probe_and_a_failing_one_asks_it(
    make_executor: Callable[..., LocalExecutor], workspace: Path, tmp_path: Path
) -> None:
    # A bwrap of its own name, so this process has no probe answer for it yet.
    bwrap = tmp_path / "bwrap"
    bwrap.symlink_to(BwrapSandbox().bwrap or "/usr/bin/bwrap")
    executor = make_executor(bwrap=BwrapSandbox(str(bwrap)))
    outcome = await shell(executor, "echo ran > ran.txt")
    assert (outcome.exit_code, outcome.sandbox) == (0, "bwrap")
    assert (workspace / "ran.txt").read_text() == "ran\n"
    assert BwrapSandbox(str(bwrap)).probed() is None
    # A failure might have been bubblewrap's own: the probe says it was not, and the command's status stands.
    outcome = await shell(executor, "echo failed >&2; exit 3")
    assert (outcome.exit_code, outcome.stderr) == (3, "failed\n")
    status = BwrapSandbox(str(bwrap)).probed()
    assert status is not None and status.available


async def test_a_bwrap_that_fails_after_a_good_probe_reports_its_own_error(
    make_executor: Callable[..., LocalExecutor], workspace: Path, tmp_path: Path
) -> None:
    # The probe's answer is kept: a later command bubblewrap cannot set up is the command's failure.
    executor = make_executor(bwrap=BwrapSandbox())
    outcome = await shell(executor, "true")
    assert outcome.exit_code == 0
    outcome = await run_shell(executor, ShellCommand(command="true", cwd=str(workspace / "gone")))
    assert outcome.exit_code != 0
    assert "bwrap" in outcome.stderr


async def test_sandbox_off_runs_directly_with_a_scrubbed_environment(
    make_executor: Callable[..., LocalExecutor], workspace: Path
) -> None:
    executor = make_executor(sandbox="off", bwrap=BwrapSandbox(str(workspace / "no-such-bwrap")))
    outcome = await shell(executor, "env; pwd")
    assert outcome.sandbox == "none"
    assert outcome.exit_code == 0
    assert str(workspace) in outcome.stdout
    for name, value in SECRET_ENV.items():
        assert name not in outcome.stdout and value not in outcome.stdout


async def test_sandbox_off_timeout_and_cancel_kill_the_process_group(
    make_executor: Callable[..., LocalExecutor], workspace: Path
) -> None:
    executor = make_executor(sandbox="off")
    seconds = unique_sleep_seconds()
    task = asyncio.create_task(shell(executor, f"sh -c 'sleep {seconds} & wait' & wait", timeout_ms=1_500))
    pids = await asyncio.to_thread(wait_for_pids, "sleep", seconds)
    outcome = await task
    survivors = await asyncio.to_thread(wait_until_gone, pids)
    assert outcome.timed_out and survivors == []

    seconds = unique_sleep_seconds()
    task = asyncio.create_task(shell(executor, f"sh -c 'sleep {seconds} & wait' & wait"))
    pids = await asyncio.to_thread(wait_for_pids, "sleep", seconds)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    survivors = await asyncio.to_thread(wait_until_gone, pids)
    for pid in survivors:
        os.kill(pid, 9)
    assert survivors == []


async def test_run_sandboxed_runs_raw_argv(
    workspace: Path, fake_home: Path, parent_environ: dict[str, str]
) -> None:
    argv = ["sh", "-c", 'printf "%s|" "$@"; echo; echo err >&2; exit 3', "sh", "two words", "$HOME", "*"]
    outcome = await run_sandboxed(
        argv,
        workspace=workspace,
        home=fake_home,
        seepient_home=fake_home / ".seepient",
        environ=parent_environ,
    )
    assert outcome.exit_code == 3
    assert outcome.stdout == "two words|$HOME|*|\n"
    assert outcome.stderr == "err\n"


async def test_run_sandboxed_can_inherit_the_standard_streams(
    workspace: Path, fake_home: Path, parent_environ: dict[str, str], capfd: pytest.CaptureFixture[str]
) -> None:
    outcome = await run_sandboxed(
        ["sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 5"],
        workspace=workspace,
        home=fake_home,
        seepient_home=fake_home / ".seepient",
        environ=parent_environ,
        stdio="inherit",
    )
    captured = capfd.readouterr()
    assert outcome.exit_code == 5
    assert (outcome.stdout, outcome.stderr) == ("", "")
    assert "to-stdout" in captured.out
    assert "to-stderr" in captured.err
