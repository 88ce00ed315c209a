"""Invariant 12 as attacks: the jail shows nothing of the home folder but the tools on PATH, hides every
read-sensitive location of the one list, and ordinary builds still work. Each attack reads with an interpreter,
not ``cat``: the shell analysis is not what stops it, the mounts are."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from seepient.config.sensitive_paths import HOME_CREDENTIALS
from seepient.execution.jail import run_sandboxed
from seepient.execution.local import LocalExecutor
from seepient.execution.lsp_config import LanguageServerConfig
from seepient.execution.sandbox.bwrap import BwrapSandbox
from seepient.execution.sandbox.host_view import host_view
from seepient.protocol import ShellCommand, WorktreeCommand
from seepient.protocol.lsp import LspQuery, LspUnavailable
from tests.approved import approved, run_shell

MARKER = "JAIL-HOME-SECRET-5e1b"

# What the issue found readable, plus the rest of the list: every one is planted and must stay unread.
PLANTED = (
    ".cargo/credentials.toml",
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".bash_history",
    ".zsh_history",
    ".gem/credentials",
    ".config/rclone/rclone.conf",
    ".cache/huggingface/token",
    ".local/share/fish/fish_history",
    ".docker/config.json",
    ".config/gh/hosts.yml",
    ".npmrc",
    ".ssh/id_ed25519",
    "Documents/private.txt",
    ".gitconfig",
)

_READ_ALL = (
    "import os, sys\n"
    "home = os.environ['HOME']\n"
    "for root, dirs, files in os.walk(home):\n"
    "    for name in files:\n"
    "        try:\n"
    "            sys.stdout.write(open(os.path.join(root, name), errors='replace').read())\n"
    "        except OSError:\n"
    "            pass\n"
    "for rel in sys.argv[1:]:\n"
    "    try:\n"
    "        sys.stdout.write(open(os.path.join(home, rel), errors='replace').read())\n"
    "    except OSError as exc:\n"
    "        sys.stdout.write(f'{rel}: {exc.strerror}\\n')\n"
)


@pytest.fixture(autouse=True)
def _bwrap_works() -> None:
    status = BwrapSandbox().probe()
    assert status.available, f"these tests need a working bubblewrap: {status.message}"


@pytest.fixture
def tool_home(outside_dir: Path) -> Path:
    """A home with credentials everywhere and two tool installations on PATH: a cargo-like one under
    ~/.cargo/bin and a pipx-like link in ~/.local/bin to a venv under ~/.local/share."""
    home = outside_dir / "toolhome"
    for rel in PLANTED:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(f"{MARKER} {rel}\n")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Jail Tester\n\temail = jail@example.invalid\n"
        f"[credential]\n\thelper = store --file {home}/.git-credentials\n[alias]\n\tx = !echo {MARKER}\n"
    )
    cargo = home / ".cargo" / "bin" / "cargolike"
    cargo.parent.mkdir(parents=True, exist_ok=True)
    cargo.write_text('#!/bin/sh\necho cargolike runs\ncat "$HOME/.rustup/toolchain"\n')
    cargo.chmod(0o755)
    (home / ".rustup").mkdir()
    (home / ".rustup" / "toolchain").write_text("stable-toolchain\n")
    venv_bin = home / ".local" / "share" / "pipxlike" / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "linked-tool").write_text("#!/bin/sh\necho linked tool runs\n")
    (venv_bin / "linked-tool").chmod(0o755)
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "linked-tool").symlink_to(venv_bin / "linked-tool")
    return home


def _executor(workspace: Path, home: Path, **options: object) -> LocalExecutor:
    environ = {
        "PATH": f"{home}/.cargo/bin:{home}/.local/bin:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
    }
    return LocalExecutor(workspace, seepient_home=home / ".seepient", home=home, environ=environ, **options)  # type: ignore[arg-type]


async def _run(executor: LocalExecutor, command: str) -> tuple[int, str]:
    outcome = await run_shell(
        executor, ShellCommand(command=command, cwd=str(executor.workspace), timeout_ms=60_000)
    )
    return outcome.exit_code, outcome.stdout + outcome.stderr


async def test_an_interpreter_reads_no_file_of_the_home(workspace: Path, tool_home: Path) -> None:
    executor = _executor(workspace, tool_home)
    code, output = await _run(
        executor, f"python3 -c \"$(cat <<'EOF'\n{_READ_ALL}EOF\n)\" {' '.join(PLANTED)}"
    )
    assert code == 0, output
    assert MARKER not in output
    for rel in PLANTED:
        assert MARKER in (tool_home / rel).read_text()  # nothing on the host was touched


async def test_every_home_relative_entry_of_the_one_list_is_hidden_even_inside_a_shown_folder(
    workspace: Path, outside_dir: Path
) -> None:
    """The whole home is hidden; a home that holds the workspace's tools is shown only folder by folder, and a
    credential inside a shown folder (``~/.cargo/credentials.toml``) stays hidden."""
    home = outside_dir / "listhome"
    for entry in HOME_CREDENTIALS:
        target = home / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"{MARKER}\n")
    (home / ".cargo" / "bin").mkdir(parents=True)
    executor = _executor(workspace, home)
    relatives = " ".join(entry.path for entry in HOME_CREDENTIALS)
    code, output = await _run(executor, f"python3 -c \"$(cat <<'EOF'\n{_READ_ALL}EOF\n)\" {relatives}")
    assert code == 0, output
    assert MARKER not in output


async def test_a_credential_reached_through_a_symbolic_link_is_hidden_where_it_really_is(
    workspace: Path, tool_home: Path, outside_dir: Path
) -> None:
    """``~/.cargo`` is shown back; its credentials file is a link to a file elsewhere, which is what the jail
    hides. A link that leads nowhere hides nothing and stops nothing."""
    vault = outside_dir / "vault"
    vault.mkdir()
    (vault / "cargo-token").write_text(f"{MARKER} linked\n")
    (tool_home / ".cargo" / "credentials.toml").unlink()
    (tool_home / ".cargo" / "credentials.toml").symlink_to(vault / "cargo-token")
    (tool_home / ".cargo" / "credentials").symlink_to(vault / "missing")
    view = host_view(home=tool_home, seepient_home=tool_home / ".seepient", environ={}, workspace=workspace)
    hidden = dict(view.hidden)
    assert hidden.get((vault / "cargo-token").resolve()) is False
    assert (vault / "missing") not in hidden and (tool_home / ".cargo" / "credentials") not in hidden
    code, output = await _run(_executor(workspace, tool_home), "cat ~/.cargo/credentials.toml; cargolike")
    assert MARKER not in output and "cargolike runs" in output


async def test_a_credential_under_a_linked_folder_is_hidden_where_it_really_is(
    workspace: Path, tool_home: Path, outside_dir: Path
) -> None:
    """The link is a folder on the way (``~/.config`` kept on another disk), not the credential itself: the
    location is resolved through every component, and the real file is what the jail hides."""
    elsewhere = outside_dir / "config-disk"
    shutil.move(tool_home / ".config", elsewhere)
    (tool_home / ".config").symlink_to(elsewhere)
    (elsewhere / "gh").mkdir(exist_ok=True)
    (elsewhere / "gh" / "hosts.yml").write_text(f"{MARKER} behind a linked folder\n")
    view = host_view(home=tool_home, seepient_home=tool_home / ".seepient", environ={}, workspace=workspace)
    assert dict(view.hidden).get((elsewhere / "gh").resolve()) is True
    code, output = await _run(_executor(workspace, tool_home), f"cat {elsewhere}/gh/hosts.yml; cargolike")
    assert MARKER not in output and "cargolike runs" in output


async def test_a_credential_that_is_a_fifo_or_a_looping_link_neither_hangs_the_view_nor_stops_commands(
    workspace: Path, tool_home: Path
) -> None:
    """Finding a location opens nothing: a FIFO planted where a credential goes is hidden like a file (opening
    it to read would wait for a writer forever), and a link that loops leads to nothing to hide."""
    (tool_home / ".npmrc").unlink(missing_ok=True)
    os.mkfifo(tool_home / ".npmrc")
    (tool_home / ".cargo" / "credentials.toml").unlink()
    (tool_home / ".cargo" / "credentials.toml").symlink_to(tool_home / ".cargo" / "credentials.toml")
    view = await asyncio.wait_for(
        asyncio.to_thread(
            host_view, home=tool_home, seepient_home=tool_home / ".seepient", environ={}, workspace=workspace
        ),
        10,
    )
    hidden = dict(view.hidden)
    assert hidden.get((tool_home / ".npmrc").resolve()) is False
    assert not any(path.name == "credentials.toml" for path in hidden)
    code, output = await _run(_executor(workspace, tool_home), "cargolike")
    assert code == 0 and "cargolike runs" in output, output


async def test_a_credential_created_on_the_host_between_two_commands_is_hidden_from_the_second(
    workspace: Path, tool_home: Path, outside_dir: Path
) -> None:
    """The installations a view found are reused for a run of steps; which credentials exist is not. A token
    written on the host right after one command (``cargo login``, ``gh auth login`` in another terminal), and a
    linked one whose target is swapped, are hidden from the very next command: inside the reuse window."""
    executor = _executor(workspace, tool_home)
    (tool_home / ".cargo" / "credentials.toml").unlink()
    code, _ = await _run(executor, "true")
    assert code == 0
    (tool_home / ".cargo" / "credentials.toml").write_text(f"{MARKER} fresh\n")
    shutil.rmtree(tool_home / ".config" / "gh")
    vault = outside_dir / "new-vault"
    vault.mkdir()
    (vault / "hosts.yml").write_text(f"{MARKER} linked\n")
    (tool_home / ".config" / "gh").symlink_to(vault)
    code, output = await _run(executor, f"cat ~/.cargo/credentials.toml {vault}/hosts.yml; cargolike")
    assert MARKER not in output and "cargolike runs" in output


async def test_the_workspace_in_a_home_is_visible_and_the_rest_is_not(tool_home: Path) -> None:
    workspace = tool_home / "projects" / "app"
    workspace.mkdir(parents=True)
    (workspace / "main.py").write_text("print('inside the workspace')\n")
    (tool_home / "projects" / "sibling.txt").write_text(f"{MARKER}\n")
    executor = _executor(workspace, tool_home)
    code, output = await _run(executor, "python3 main.py; cat ../sibling.txt; ls -A ~")
    assert "inside the workspace" in output
    assert MARKER not in output
    listed = output.splitlines()
    assert "Documents" not in listed and ".ssh" not in listed


async def test_tools_on_path_under_the_home_still_run(workspace: Path, tool_home: Path) -> None:
    executor = _executor(workspace, tool_home)
    code, output = await _run(executor, "cargolike && linked-tool")
    assert code == 0, output
    assert "cargolike runs" in output and "stable-toolchain" in output and "linked tool runs" in output


async def test_git_in_the_jail_has_an_identity_and_none_of_the_users_git_config(
    workspace: Path, tool_home: Path
) -> None:
    executor = _executor(workspace, tool_home)
    code, output = await _run(
        executor,
        "git init -q . && echo hi > a.txt && git add a.txt && git commit -qm first && git log -1 --format=%an,%ae"
        " && git config --get credential.helper; git x; true",
    )
    assert "Jail Tester,jail@example.invalid" in output, output
    assert MARKER not in output
    assert "store --file" not in output


@pytest.mark.skipif(os.geteuid() != 0, reason="/etc/shadow is unreadable anyway for an unprivileged user")
async def test_password_hashes_and_private_keys_of_the_system_are_hidden_from_root(
    workspace: Path, tool_home: Path
) -> None:
    executor = _executor(workspace, tool_home)
    shadow = Path("/etc/shadow").read_text()
    assert shadow.strip(), "the host's /etc/shadow is empty: this test proves nothing here"
    probe = (
        "import glob\n"
        "for p in ['/etc/shadow', '/etc/gshadow', *glob.glob('/etc/ssh/*key*'), *glob.glob('/etc/ssl/private/*')]:\n"
        "    try: print(p, repr(open(p).read()))\n"
        "    except OSError as e: print(p, e.strerror)\n"
    )
    code, output = await _run(executor, f"python3 -c \"$(cat <<'EOF'\n{probe}EOF\n)\"")
    assert code == 0, output
    first_hash_line = next(line for line in shadow.splitlines() if line.startswith("root:"))
    assert first_hash_line not in output
    # A hidden file is the host's /dev/null bound on a nodev mount: it opens as nothing or not at all.
    assert "/etc/shadow ''" in output or "/etc/shadow Permission denied" in output


async def test_the_real_home_of_the_user_running_seepient_is_hidden(workspace: Path) -> None:
    """The machine's own home (here, /root with pyenv and cargo) shows its tool folders and nothing else."""
    home = Path.home()
    names = {entry.name for entry in os.scandir(home)}
    outcome = await run_sandboxed(
        ["ls", "-A", str(home)], workspace=workspace, seepient_home=workspace / ".no-home"
    )
    shown = set(outcome.stdout.split())
    view = host_view(home=home, seepient_home=workspace / ".no-home", environ=os.environ, workspace=workspace)
    expected = {p.relative_to(home).parts[0] for p in view.shown if p.is_relative_to(home)}
    assert shown == expected & names
    for private in (".gitconfig", ".bashrc", ".claude", ".config", ".cache"):
        assert private not in shown


async def test_user_settings_add_readable_and_hidden_paths(
    workspace: Path, tool_home: Path, outside_dir: Path
) -> None:
    (tool_home / ".m2" / "repository").mkdir(parents=True)
    (tool_home / ".m2" / "repository" / "artifact.txt").write_text("cached artifact\n")
    secret_dir = outside_dir / "team-secrets"
    secret_dir.mkdir()
    (secret_dir / "key.txt").write_text(f"{MARKER}\n")
    executor = _executor(
        workspace, tool_home, jail_readable=(tool_home / ".m2" / "repository",), jail_hidden=(secret_dir,)
    )
    code, output = await _run(executor, f"cat ~/.m2/repository/artifact.txt; cat {secret_dir}/key.txt")
    assert "cached artifact" in output
    assert MARKER not in output


async def test_the_users_hidden_paths_are_hidden_in_every_jail_not_only_a_shell_commands(
    workspace: Path, tool_home: Path, outside_dir: Path
) -> None:
    """``execution.sandboxHidden`` (and Seepient's own files kept outside its home, which the session adds to it)
    hold for the worktree commands' jail, the language servers' jail and the read-only jail too, not only for
    shell commands: each is made to print a shown file and a hidden one."""
    secret_dir = outside_dir / "team-secrets"
    secret_dir.mkdir()
    (secret_dir / "key.txt").write_text(f"{MARKER}\n")
    (outside_dir / "shown.txt").write_text("visible\n")
    both = f"cat {outside_dir / 'shown.txt'} {secret_dir / 'key.txt'}"
    executor = _executor(
        workspace,
        tool_home,
        jail_hidden=(secret_dir,),
        language_servers=[
            LanguageServerConfig(
                language="probe", command=("sh", "-c", f"{both} >&2; exit 3"), extensions=(".probe",)
            )
        ],
    )
    try:
        # The worktree tool prepares git's argv; the executor runs whatever argv the approved action carries.
        listed = await executor.execute(
            approved(WorktreeCommand(operation="list", argv=("sh", "-c", both), cwd=str(executor.workspace)))
        )
        assert "visible" in listed.stdout and MARKER not in listed.stdout + listed.stderr
        (workspace / "a.probe").write_text("x\n")
        with pytest.raises(LspUnavailable) as failed:
            await executor.reads.lsp_query(LspQuery(operation="hover", path=str(workspace / "a.probe")))
        assert "visible" in str(failed.value) and MARKER not in str(failed.value)
        jailed = executor.read_only_jail(["sh", "-c", both], workspace)
        assert jailed is not None
        argv, env = jailed
        read = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
        assert "visible" in read.stdout and MARKER not in read.stdout + read.stderr
    finally:
        await executor.aclose()


async def test_ordinary_builds_work_in_the_jail(workspace: Path) -> None:
    """python, pytest-like test runs, make, git commit, node, and cargo from the machine's own home."""
    (workspace / "Makefile").write_text("all:\n\tpython3 -c \"print('made')\"\n")
    (workspace / "test_a.py").write_text(
        "import unittest\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertTrue(True)\n"
    )
    executor = LocalExecutor(workspace, seepient_home=workspace / ".no-home")
    steps = [
        "make",
        "python3 -m unittest -q test_a 2>&1",
        "git init -q . && git add -A && git -c user.name=t -c user.email=t@t commit -qm x && git log --oneline | wc -l",
    ]
    if shutil.which("node"):
        steps.append("node -e 'console.log(6*7)'")
    if shutil.which("cargo"):
        steps.append("cargo --version")
    for step in steps:
        code, output = await _run(executor, step)
        assert code == 0, f"{step}: {output}"
    assert subprocess.run(
        ["git", "-C", str(workspace), "log", "--oneline"], capture_output=True, text=True
    ).stdout


# -- links a command plants in a workspace virtualenv (red team, after issue 16) ------------------------------
# The jail shows back the Python a workspace virtualenv's `python` links to. It followed every link in
# `.venv/bin` (and `venv`, `env`, `.env`), and the workspace is the model's: one command ran
# `ln -s ~/Documents .venv/bin/x` (a link's target need not be visible to be made), and the next command's jail
# showed that folder, or a whole dot-folder of the home (`~/.thunderbird`, `~/.config`), read-only.


@pytest.mark.parametrize(
    "target",
    [
        "Documents",
        "Documents/private.txt",
        ".codex",
        ".config/rclone",
        ".local/share/fish/fish_history",
        ".ssh/id_ed25519",
        ".gitconfig",
    ],
)
async def test_links_planted_in_a_workspace_venv_show_nothing_of_the_home(
    workspace: Path, tool_home: Path, target: str
) -> None:
    executor = _executor(workspace, tool_home)
    for venv in (".venv", "venv", "env", ".env"):
        code, output = await _run(
            executor,
            f"mkdir -p {venv}/bin && ln -s {tool_home / target} {venv}/bin/python "
            f"&& ln -s {tool_home / target} {venv}/bin/python3.12",
        )
        assert code == 0, output
    await asyncio.sleep(2.1)  # the view is reused for two seconds; the next one sees the links
    code, output = await _run(
        executor, f"python3 -c \"$(cat <<'EOF'\n{_READ_ALL}EOF\n)\" {' '.join(PLANTED)}"
    )
    assert code == 0, output
    assert MARKER not in output


def test_a_venv_made_from_a_python_under_the_home_still_shows_that_python(
    workspace: Path, outside_dir: Path
) -> None:
    home = outside_dir / "pyhome"
    python = home / ".local" / "share" / "uv" / "python" / "cpython-3.12" / "bin" / "python3.12"
    python.parent.mkdir(parents=True)
    (python.parent.parent / "lib" / "python3.12").mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    pyenv = home / ".pyenv" / "versions" / "3.11.9" / "bin" / "python3.11"
    pyenv.parent.mkdir(parents=True)
    pyenv.write_text("#!/bin/sh\n")
    pyenv.chmod(0o755)
    (workspace / ".venv" / "bin").mkdir(parents=True)
    (workspace / ".venv" / "bin" / "python").symlink_to(python)
    (workspace / "venv" / "bin").mkdir(parents=True)
    (workspace / "venv" / "bin" / "python3").symlink_to(pyenv)
    view = host_view(
        home=home, seepient_home=home / ".seepient", environ={"PATH": "/usr/bin:/bin"}, workspace=workspace
    )
    assert python.parent.parent in view.shown and home / ".pyenv" in view.shown


async def test_links_planted_in_an_activated_workspace_venv_on_path_show_nothing_of_the_home(
    tool_home: Path, outside_dir: Path
) -> None:
    """The same links, when the user started Seepient with the project's virtualenv activated: its bin folder
    is a PATH entry under the home, whose links the view followed as it does ~/.local/bin's."""
    workspace = tool_home / "projects" / "app"
    (workspace / ".venv" / "bin").mkdir(parents=True)
    environ = {
        "PATH": f"{workspace}/.venv/bin:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(tool_home),
        "LANG": "C.UTF-8",
    }
    executor = LocalExecutor(
        workspace, seepient_home=tool_home / ".seepient", home=tool_home, environ=environ
    )
    code, output = await _run(
        executor,
        f"ln -s {tool_home / 'Documents'} .venv/bin/docs && ln -s {tool_home / '.gitconfig'} .venv/bin/g",
    )
    assert code == 0, output
    await asyncio.sleep(2.1)
    code, output = await _run(
        executor, f"python3 -c \"$(cat <<'EOF'\n{_READ_ALL}EOF\n)\" {' '.join(PLANTED)}"
    )
    assert code == 0, output
    assert MARKER not in output


def test_a_folder_path_names_twice_shows_the_same(tool_home: Path, workspace: Path) -> None:
    once = f"{tool_home}/.cargo/bin:{tool_home}/.local/bin:/usr/bin:/bin"
    twice = f"{tool_home}/.cargo/bin:{once}:{tool_home}/.local/bin"
    views = [
        host_view(
            home=tool_home, seepient_home=tool_home / ".seepient", environ={"PATH": path}, workspace=workspace
        )
        for path in (once, twice)
    ]
    assert views[0].shown == views[1].shown and views[0].hidden == views[1].hidden
    assert tool_home / ".cargo" in views[1].shown and tool_home / ".rustup" in views[1].shown
