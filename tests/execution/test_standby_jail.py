"""The standby jail: a command run in it sees exactly the environment and jail a jail of its own gives, and a
standby set up before the host changed (a hidden file replaced by a rename, a credential created) is never used."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

from seepient.execution.jail import Jail
from seepient.execution.standby_jail import JailStandby, command_payload, locales_named


def _jail(tmp_path: Path) -> Jail:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    return Jail.build(workspace, seepient_home=home / ".seepient", home=home, environ=environ)


async def _run(jail: Jail, line: str, standby: JailStandby | None):
    view = jail.view(jail.workspace)
    argv, added = jail.line_argv(line, jail.workspace, view=view)
    return await jail.run(argv, cwd=jail.workspace, timeout_s=10, extra_env=added, view=view, standby=standby)


async def test_a_command_in_the_standby_sees_what_it_would_in_a_jail_of_its_own(tmp_path: Path) -> None:
    jail = _jail(tmp_path)
    standby = JailStandby(jail.workspace)
    try:
        own = await _run(jail, "env -0", None)
        await _run(jail, "true", standby)  # sets the standby up
        assert standby._ready is not None
        taken = await _run(jail, "env -0", standby)
        assert standby._ready is None or standby._ready.process.pid != taken  # each jail runs one command
        assert taken.exit_code == own.exit_code == 0
        assert sorted(taken.stdout.split("\0")) == sorted(own.stdout.split("\0"))
        line = "echo $$ $SHLVL $PWD; ls /proc | grep -c '^[0-9]'"
        assert (await _run(jail, line, standby)).stdout == (await _run(jail, line, None)).stdout
    finally:
        await standby.aclose()


async def test_a_file_replaced_by_a_rename_after_the_standby_was_set_up_is_not_shown(tmp_path: Path) -> None:
    jail = _jail(tmp_path)
    token = jail.home / ".config" / "gh" / "hosts.yml"
    token.parent.mkdir(parents=True)
    token.write_text("old-secret\n")
    # The home is hidden whole; a folder shown back holding a credential is the case a mount hides one file in.
    shown = Jail.build(
        jail.workspace,
        seepient_home=jail.seepient_home,
        home=jail.home,
        environ=dict(jail.environ),
        readable=[jail.home / ".config"],
    )
    standby = JailStandby(shown.workspace)
    try:
        await _run(shown, "true", standby)
        assert standby._ready is not None
        spare = standby._ready.process
        # As `gh auth login` rewrites its file: a new file renamed over the old, which takes the mount hiding
        # the old one away in the standby's mount namespace.
        fresh = token.with_name("hosts.yml.new")
        fresh.write_text("new-secret\n")
        os.replace(fresh, token)
        outcome = await _run(shown, f"cat {token}", standby)
        assert "secret" not in outcome.stdout
        assert spare.poll() is not None  # the standby was killed unused
    finally:
        await standby.aclose()


async def test_a_credential_created_after_the_standby_was_set_up_is_hidden(tmp_path: Path) -> None:
    jail = _jail(tmp_path)
    config = jail.home / ".config"
    (config / "other").mkdir(parents=True)
    shown = Jail.build(
        jail.workspace,
        seepient_home=jail.seepient_home,
        home=jail.home,
        environ=dict(jail.environ),
        readable=[config],
    )
    standby = JailStandby(shown.workspace)
    try:
        await _run(shown, "true", standby)
        token = config / "gh" / "hosts.yml"
        token.parent.mkdir()
        token.write_text("created-secret\n")
        outcome = await _run(shown, f"cat {token}", standby)
        assert "secret" not in outcome.stdout
    finally:
        await standby.aclose()


_AWKWARD = [
    "",
    " leading and trailing  ",
    "tab\tnew\nline\r\n",
    "back\\slash \\n $HOME `id` $(id) '\"",
    "-n",
    "* ? [a]",
    "\x01\x02\x03\x7f " + os.fsdecode(b"\xff\xfe raw bytes"),
    "é 日本 🙂",
    "x" * 5000,
]


async def test_awkward_arguments_and_values_reach_the_command_byte_for_byte(tmp_path: Path) -> None:
    jail = _jail(tmp_path)
    standby = JailStandby(jail.workspace)
    # As the shell tool runs a plain program: with the SHLVL and PWD bash would have given it
    # (``plain_command.py``), here a PWD naming elsewhere, which bubblewrap's --chdir corrects.
    extra = {f"AWKWARD_{index}": value for index, value in enumerate(_AWKWARD)}
    extra |= {"SHLVL": "2", "PWD": "/elsewhere"}

    async def run(argv: list[str], with_standby: JailStandby | None):
        view = jail.view(jail.workspace)
        return await jail.run(
            argv, cwd=jail.workspace, timeout_s=10, extra_env=extra, view=view, standby=with_standby
        )

    try:
        await run(["true"], standby)  # sets the standby up
        for argv in (["printf", "%s\\0", *_AWKWARD], ["env", "-0"]):
            spare = standby._ready
            assert spare is not None
            taken = await run(argv, standby)
            assert spare.process.returncode == 0  # it ran the command, not killed unused
            own = await run(argv, None)
            assert taken.exit_code == own.exit_code == 0
            # The same bytes (the environment in the order the shell keeps it)
            assert sorted(taken.stdout.split("\0")) == sorted(own.stdout.split("\0"))
        printed = (await run(["printf", "%s\\0", *_AWKWARD], standby)).stdout.split("\0")
        assert [value for value in printed[:-1] if "raw bytes" not in value] == [
            value for value in _AWKWARD if "raw bytes" not in value
        ]
        variables = (await run(["env", "-0"], standby)).stdout.split("\0")
        assert {f"AWKWARD_{i}={v}" for i, v in enumerate(_AWKWARD) if "raw" not in v} <= set(variables)
    finally:
        await standby.aclose()


async def test_locales_loaded_while_the_standby_waits_change_nothing_the_command_sees(tmp_path: Path) -> None:
    jail = _jail(tmp_path)
    standby = JailStandby(jail.workspace)
    # What the command sees of its locale and of the bytes it reads, and whatever bash says on its way.
    line = "locale; printf '%s\\n' \"$LC_ALL|$LANG\"; printf 'é日' | wc -m; printf 'é日' | wc -c"
    assert locales_named({"LANG": "C.UTF-8", "LC_ALL": "", "LC_TIME": "C.UTF-8", "TERM": "C"}) == ("C.UTF-8",)
    try:
        own = await _run(jail, line, None)
        assert own.exit_code == 0 and own.stdout.split()[-2:] == ["2", "5"], own
        # A locale this machine lacks, and one that is not even a name, are loaded in vain and said nowhere.
        for locales in (("C.UTF-8",), ("xx_YY.NOPE", "C.UTF-8", "-/..")):
            standby.refill(jail._standby_layout(jail.view(jail.workspace)), locales=locales)
            spare = standby._ready
            assert spare is not None
            taken = await _run(jail, line, standby)
            assert spare.process.returncode == 0  # it ran the command, not killed unused
            assert (taken.exit_code, taken.stdout, taken.stderr) == (own.exit_code, own.stdout, own.stderr)
            standby._discard()
    finally:
        await standby.aclose()


def test_an_environment_bash_would_not_pass_on_unchanged_gets_a_jail_of_its_own() -> None:
    cwd = Path("/")
    assert command_payload(["true"], cwd=cwd, env={"PATH": "/bin"}) is not None
    for env in (
        {"RANDOM": "4"},
        {"SHELLOPTS": "x"},
        {"BASH_FUNC_f%%": "() { :; }"},
        {"SEEPIENT_STANDBY": "x"},
    ):
        assert command_payload(["true"], cwd=cwd, env=env) is None
    assert command_payload(["true"], cwd=cwd, env={"SHLVL": "x"}) is None
    assert command_payload(["x" * 40_000], cwd=cwd, env={}) is None
    # Fields are cut at a byte none of them holds; a command holding every such byte gets a jail of its own.
    every = "".join(map(chr, range(2, 32))) + "!#%+,-./:;=@^_|~"
    assert command_payload(["printf", every[:-1]], cwd=cwd, env={}) is not None
    assert command_payload(["printf", every], cwd=cwd, env={}) is None


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    waiting = [pid]
    while waiting:
        parent = waiting.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        waiting += [int(child) for child in children]
        found.update(int(child) for child in children)
    return found


def _alive(pid: int) -> bool:
    """Running, not gone or a zombie (whose command line reads empty)."""
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return False


async def _close_a_waiting_standby_and_check_nothing_of_it_runs(jail: Jail) -> None:
    standby = JailStandby(jail.workspace)
    jail.start_standby(standby)
    assert standby._ready is not None
    process = standby._ready.process
    deadline = time.monotonic() + 5
    while len(inside := _descendants(process.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert len(inside) >= 2  # the namespace's init and the trampoline waiting on its input
    await standby.aclose()
    assert process.poll() is not None
    assert not [pid for pid in inside if _alive(pid)]


async def test_closing_kills_the_standby_and_every_process_in_it(tmp_path: Path) -> None:
    jail = _jail(tmp_path)
    # The jail's processes die of bubblewrap's death a moment after it; a few rounds catch a kill that
    # returns in that moment.
    for _ in range(12):
        await _close_a_waiting_standby_and_check_nothing_of_it_runs(jail)


async def test_a_process_holding_many_descriptors_kills_its_standby_all_the_same(tmp_path: Path) -> None:
    # A server with hundreds of sessions holds descriptors past 1024, where select() cannot wait on one.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1200
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    held: list[int] = []
    try:
        while not held or held[-1] < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        await _close_a_waiting_standby_and_check_nothing_of_it_runs(_jail(tmp_path))
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_a_standby_started_ahead_is_the_jail_the_next_command_runs_in(tmp_path: Path) -> None:
    jail = _jail(tmp_path)
    standby = JailStandby(jail.workspace)
    try:
        jail.start_standby(standby)
        assert standby._ready is not None
        spare = standby._ready.process
        outcome = await _run(jail, "echo ran-here", standby)
        assert outcome.stdout == "ran-here\n"
        # It exited by running the command, not killed unused (which leaves -SIGKILL).
        assert spare.poll() == 0
    finally:
        await standby.aclose()


async def test_no_standby_is_started_ahead_with_the_sandbox_off(tmp_path: Path) -> None:
    on = _jail(tmp_path)
    off = Jail.build(
        on.workspace,
        seepient_home=on.seepient_home,
        home=on.home,
        environ=dict(on.environ),
        sandbox_mode="off",
    )
    standby = JailStandby(off.workspace)
    off.start_standby(standby)
    assert not standby.ready
    await standby.aclose()


async def test_the_next_standby_is_started_with_the_command_only_while_the_model_outpaces_the_setup(
    tmp_path: Path, monkeypatch
) -> None:
    import asyncio

    from seepient.execution import standby_jail

    # Wide enough that a loaded machine's own delays are not taken for the model's pace.
    monkeypatch.setattr(standby_jail, "_SET_UP_WITHIN_S", 0.5)
    jail = _jail(tmp_path)
    standby = JailStandby(jail.workspace)

    async def ready_while_it_runs() -> bool:
        running = asyncio.ensure_future(_run(jail, "sleep 0.4", standby))
        await asyncio.sleep(0.15)
        ready = standby.ready
        assert (await running).exit_code == 0
        return ready

    try:
        # A command handed a standby started a moment ago: the model answers faster than a jail is set up.
        jail.start_standby(standby)
        await _run(jail, "true", standby)
        assert standby.needs_head_start
        assert await ready_while_it_runs()  # the next jail was set up while this command ran
        # A standby that waited (a model taking its time): the next is set up once the command has ended.
        await asyncio.sleep(0.6)
        assert not await ready_while_it_runs()
        assert not standby.needs_head_start
        assert standby.ready
    finally:
        await standby.aclose()
