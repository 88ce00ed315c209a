"""The bubblewrap command line and the probe: mount order, flags, what gets hidden, and the advice given when
bubblewrap cannot start."""

from __future__ import annotations

from pathlib import Path

import pytest

from seepient.execution.sandbox.bwrap import (
    BwrapSandbox,
    _diagnose,
    protected_workspace_paths,
)
from seepient.execution.sandbox.host_view import HostView, host_view


def _view(hidden: list[Path]) -> HostView:
    existing = tuple((p.resolve(), p.is_dir()) for p in hidden if p.exists())
    return HostView(hidden_homes=(), shown=(), hidden=existing, env={})


def argv_for(workspace: Path, *, network: bool = False, hidden: list[Path] | None = None) -> list[str]:
    return BwrapSandbox("/usr/bin/bwrap").command_argv(
        ["echo", "hi"],
        workspace=workspace,
        cwd=workspace,
        network=network,
        view=_view(hidden or []),
        read_only_inside=protected_workspace_paths(workspace),
        env={"PATH": "/usr/bin", "HOME": "/h"},
    )


def _index(argv: list[str], *sequence: str) -> int:
    for start in range(len(argv)):
        if argv[start : start + len(sequence)] == list(sequence):
            return start
    raise AssertionError(f"{sequence} not in {argv}")


def test_private_tmp_comes_before_the_workspace_bind_and_protection_after(workspace: Path) -> None:
    argv = argv_for(workspace)
    root = str(workspace.resolve())
    assert argv[:3] == ["/usr/bin/bwrap", "--ro-bind", "/"]
    tmp = _index(argv, "--tmpfs", "/tmp")
    bind = _index(argv, "--bind", root, root)
    settings = _index(argv, "--ro-bind", f"{root}/.seepient", f"{root}/.seepient")
    assert tmp < bind < settings
    assert argv[-3:] == ["--", "echo", "hi"]
    assert _index(argv, "--chdir", root) > settings


def test_flags_cut_everything_and_network_only_on_request(workspace: Path) -> None:
    closed = argv_for(workspace)
    for flag in ("--unshare-all", "--die-with-parent", "--new-session", "--clearenv"):
        assert flag in closed
    assert _index(closed, "--cap-drop", "ALL")
    assert "--share-net" not in closed
    assert "--share-net" in argv_for(workspace, network=True)
    assert _index(closed, "--setenv", "HOME", "/h") > _index(closed, "--clearenv")


def test_hidden_paths_are_mounted_over_after_the_workspace(workspace: Path, outside_dir: Path) -> None:
    (outside_dir / ".ssh").mkdir()
    (outside_dir / ".netrc").write_text("x")
    argv = argv_for(workspace, hidden=[outside_dir / ".ssh", outside_dir / ".netrc", outside_dir / "absent"])
    ssh = _index(argv, "--tmpfs", str(outside_dir / ".ssh"))
    assert _index(argv, "--remount-ro", str(outside_dir / ".ssh")) == ssh + 2
    assert _index(argv, "--ro-bind", "/dev/null", str(outside_dir / ".netrc")) > _index(
        argv, "--bind", str(workspace.resolve())
    )
    assert str(outside_dir / "absent") not in argv


def test_a_workspace_inside_a_hidden_location_is_refused(outside_dir: Path) -> None:
    inside = outside_dir / ".aws" / "project"
    inside.mkdir(parents=True)
    with pytest.raises(ValueError, match="sensitive location"):
        argv_for(inside, hidden=[outside_dir / ".aws"])


def test_the_host_view_hides_existing_credentials_sockets_and_seepient_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    seepient_home = tmp_path / "seepient-home"
    run_user = tmp_path / "run-user"
    for folder in (".ssh", ".aws", ".gnupg", ".kube", ".docker", ".config/gcloud", ".seepient", ".codex"):
        (home / folder).mkdir(parents=True)
    for name in (".netrc", ".git-credentials", ".codex/auth.json", ".bash_history"):
        (home / name).write_text("secret")
    seepient_home.mkdir()
    (run_user / "agent.sock").parent.mkdir()
    (run_user / "agent.sock").write_text("")
    environ = {
        "SSH_AUTH_SOCK": str(run_user / "agent.sock"),
        "XDG_RUNTIME_DIR": str(run_user),
        "PATH": "/usr/bin",
    }
    view = host_view(home=home, seepient_home=seepient_home, environ=environ)
    hidden = {path for path, _ in view.hidden}
    for expected in (
        home / ".ssh", home / ".aws", home / ".gnupg", home / ".kube", home / ".docker", home / ".config/gcloud",
        home / ".netrc", home / ".git-credentials", home / ".seepient", seepient_home, home / ".codex/auth.json",
        home / ".bash_history", run_user,
    ):  # fmt: skip
        assert expected.resolve() in hidden, expected
    # the agent socket lies inside the hidden runtime folder, which covers it
    assert (run_user / "agent.sock").resolve() not in hidden


def test_protected_paths_are_made_to_exist(workspace: Path) -> None:
    (workspace / ".git").mkdir()
    protected = protected_workspace_paths(workspace)
    root = workspace.resolve()
    assert protected == [root / ".seepient", root / ".git" / "hooks", root / ".git" / "config"]
    assert (root / ".seepient").is_dir() and (root / ".git" / "hooks").is_dir()
    assert (root / ".git" / "config").read_bytes() == b""


def test_the_probe_runs_once_and_says_available() -> None:
    sandbox = BwrapSandbox()
    first = sandbox.probe()
    assert first.available, first.message
    assert BwrapSandbox().probe() is first


def test_a_missing_bwrap_names_the_package() -> None:
    status = BwrapSandbox("/nonexistent/bwrap").probe()
    assert not status.available
    assert "apt-get install bubblewrap" in status.message
    assert "--sandbox off" in status.message


@pytest.mark.parametrize(
    "stderr",
    [
        # What bubblewrap prints when the kernel refuses unprivileged user namespaces.
        "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
        "non-privileged user namespaces. On e.g. debian this can be enabled with "
        "'sysctl kernel.unprivileged_userns_clone=1'.",
        "bwrap: setting up uid map: Permission denied",
        "bwrap: Creating new namespace failed: Operation not permitted",
    ],
)
def test_disabled_user_namespaces_get_the_sysctl_advice(stderr: str) -> None:
    status = _diagnose(stderr, "/usr/bin/bwrap")
    assert not status.available
    assert "kernel.unprivileged_userns_clone=1" in status.message
    assert "kernel.apparmor_restrict_unprivileged_userns" in status.message
    assert "--sandbox off" in status.message
    assert stderr.strip() in status.message
