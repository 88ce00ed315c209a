"""Environment facts: container detection on fake roots, git state from real repositories (and a repository
that tries to run code when git looks at it), time zone and the rendered section."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from seepient.context.environment import (
    GitProbe,
    detect_container,
    gather_environment,
    read_branch,
)

NO_ENV: dict[str, str] = {}


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "fakeroot"
    (root / "proc" / "1").mkdir(parents=True)
    (root / "proc" / "self").mkdir()
    (root / "run").mkdir()
    (root / "etc").mkdir()
    return root


def test_bare_host_is_not_a_container(tmp_path):
    root = _root(tmp_path)
    (root / "proc" / "1" / "cgroup").write_text("0::/init.scope\n")
    (root / "proc" / "self" / "mountinfo").write_text("22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n")
    info = detect_container(root, NO_ENV)
    assert (info.detected, info.kind, info.evidence) == (False, None, ())


def test_docker(tmp_path):
    root = _root(tmp_path)
    (root / ".dockerenv").touch()
    info = detect_container(root, NO_ENV)
    assert (info.detected, info.kind) == (True, "docker")
    assert info.evidence == ("/.dockerenv exists",)


def test_podman_names_its_engine(tmp_path):
    root = _root(tmp_path)
    (root / "run" / ".containerenv").write_text('engine="podman-4.9.3"\nname="dev"\n')
    assert detect_container(root, NO_ENV).kind == "podman"
    (root / "run" / ".containerenv").write_text("")
    assert detect_container(root, NO_ENV).kind == "podman"


def test_kubernetes_beats_the_runtime_underneath(tmp_path):
    root = _root(tmp_path)
    (root / ".dockerenv").touch()
    (root / "var" / "run" / "secrets" / "kubernetes.io" / "serviceaccount").mkdir(parents=True)
    info = detect_container(root, NO_ENV)
    assert info.kind == "kubernetes"
    assert set(info.evidence) == {"/.dockerenv exists", "/var/run/secrets/kubernetes.io exists"}
    env_only = detect_container(_root(tmp_path / "b"), {"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert (env_only.detected, env_only.kind) == (True, "kubernetes")


def test_cgroup_v1_and_mountinfo_hints(tmp_path):
    root = _root(tmp_path)
    (root / "proc" / "1" / "cgroup").write_text("12:pids:/docker/3f2a9c\n11:memory:/docker/3f2a9c\n")
    assert detect_container(root, NO_ENV).kind == "docker"
    root = _root(tmp_path / "b")
    (root / "proc" / "1" / "cgroup").write_text("0::/\n")
    (root / "proc" / "self" / "mountinfo").write_text(
        "1 0 0:1 / / rw - overlay overlay rw,lowerdir=/var/lib/containers/storage/overlay/l/X\n"
    )
    info = detect_container(root, NO_ENV)
    assert (info.kind, info.evidence) == (
        "podman",
        ("/proc/self/mountinfo mentions /containers/storage/overlay",),
    )


def test_systemd_container_marker_and_env(tmp_path):
    root = _root(tmp_path)
    (root / "run" / "systemd").mkdir()
    (root / "run" / "systemd" / "container").write_text("systemd-nspawn\n")
    assert detect_container(root, NO_ENV).kind == "systemd-nspawn"
    assert detect_container(_root(tmp_path / "b"), {"container": "lxc"}).kind == "lxc"


# -- git ----------------------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    path = tmp_path / "repo"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("one\n")
    _git(path, "add", "a.txt")
    _git(path, "commit", "-qm", "first")
    return path


@pytest.fixture
def jail(tmp_path: Path):  # type: ignore[no-untyped-def]
    """How the runtime runs git for the prompt: in the sandbox, the repository read-only."""
    from seepient.execution.local import LocalExecutor

    (tmp_path / "jail-ws").mkdir()
    return LocalExecutor(tmp_path / "jail-ws", seepient_home=tmp_path / "jail-home").read_only_jail


def test_clean_then_dirty_branch(repo, jail):
    state = GitProbe(repo, jail=jail).result()
    assert (state.root, state.branch, state.dirty) == (repo, "main", False)
    (repo / "a.txt").write_text("two\n")
    assert GitProbe(repo, jail=jail).result().dirty is True
    (repo / "a.txt").write_text("one\n")
    (repo / "new.txt").write_text("untracked\n")
    assert GitProbe(repo, jail=jail).result().dirty is True


def test_detached_head_and_worktree_git_file(repo, tmp_path, jail):
    _git(repo, "checkout", "-q", "--detach")
    branch, head = read_branch(repo)
    assert branch is None and head is not None and len(head) == 40
    _git(repo, "checkout", "-q", "main")
    _git(repo, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "wt"))
    assert (tmp_path / "wt" / ".git").is_file()
    state = GitProbe(tmp_path / "wt", jail=jail).result()
    assert (state.branch, state.dirty) == ("feature", False)


def test_without_a_jail_git_never_runs_and_the_branch_still_shows(repo):
    state = GitProbe(repo).result()
    assert (state.branch, state.dirty) == ("main", None)


def test_looking_at_a_repository_runs_none_of_its_programs(repo, tmp_path, jail):
    """Attack: a repository whose .git/config names programs git would run (fsmonitor, a clean filter, a
    hook on index changes) — for example one unpacked from an archive. Seepient's status check must run none."""
    marker = tmp_path / "pwned"
    payload = f"sh -c 'echo ran >> {marker}'; cat"
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[core]\n\tfsmonitor = "{payload}"\n[filter "evil"]\n\tclean = "{payload}"\n')
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "post-index-change").write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    (hooks / "post-index-change").chmod(0o755)
    (repo / ".gitattributes").write_text("* filter=evil\n")
    # Same content, new timestamp: git must re-hash the file, which is when a clean filter would run.
    (repo / "a.txt").write_text("one\n")
    state = GitProbe(repo, jail=jail).result()
    assert not marker.exists(), marker.read_text()
    assert state.dirty is True  # .gitattributes is untracked
    # Plain git in the same repository does run them: the attack is real.
    subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, check=False)
    assert marker.exists()


def test_a_filter_planted_through_commondir_does_not_run_on_the_host(repo, jail):
    """The issue's reproduction: .git/commondir names a folder whose config defines a filter driver and whose
    info/attributes applies it. Run on the host, git status runs the filter; Seepient's probe runs in the jail."""
    marker_dir = Path(tempfile.mkdtemp(dir="/var/tmp"))  # outside /tmp, which the jail replaces
    marker = marker_dir / "pwned"
    try:
        evil = repo / "evil"
        shutil.copytree(repo / ".git", evil)
        with (evil / "config").open("a") as config:
            config.write(f'[filter "x"]\n\tclean = touch {marker}; cat\n')
        (evil / "info").mkdir(exist_ok=True)
        (evil / "info" / "attributes").write_text("* filter=x\n")
        (repo / ".git" / "commondir").write_text("../evil\n")
        (repo / "a.txt").write_text("one\n")  # re-hashed, which is when a clean filter runs
        GitProbe(repo, jail=jail).result()
        assert not marker.exists()
        subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, check=False)
        assert marker.exists()  # the attack is real on the host
    finally:
        shutil.rmtree(marker_dir, ignore_errors=True)


# -- the rendered facts -------------------------------------------------------------------------------


def test_gathered_facts_render_every_item(tmp_path, workspace):
    root = _root(tmp_path)
    (root / ".dockerenv").touch()
    (root / "etc" / "timezone").write_text("Europe/Berlin\n")
    moment = datetime(2025, 3, 1, 12, 30, tzinfo=UTC)
    facts = gather_environment(
        workspace,
        consent_mode="always-ask",
        sandboxed=False,
        root=root,
        environ={"SHELL": "/usr/bin/zsh"},
        now=moment,
    )
    text = facts.render()
    assert f"- Working directory: {workspace}" in text
    assert "2025-03-01 12:30 (Europe/Berlin, UTC+00:00)" in text
    assert "inside a container (docker)" in text
    assert "Git: not a git repository" in text
    assert "WITHOUT a sandbox" in text
    assert "Consent mode: always-ask (the user approves every file change and shell command)" in text
    assert "login shell is /usr/bin/zsh" in text
    assert facts.as_dict()["container"] == {
        "detected": True,
        "kind": "docker",
        "evidence": ["/.dockerenv exists"],
    }
    sandboxed = gather_environment(
        workspace, consent_mode="ask-untrusted", sandboxed=True, root=root, environ={}
    )
    assert "sandbox with no network access" in sandboxed.render()


def test_time_zone_from_tz_and_localtime_link(tmp_path, workspace):
    root = _root(tmp_path)
    (root / "etc" / "localtime").symlink_to("/usr/share/zoneinfo/America/New_York")
    facts = gather_environment(workspace, consent_mode="ask-untrusted", sandboxed=True, root=root, environ={})
    assert facts.time_zone == "America/New_York"
    facts = gather_environment(
        workspace, consent_mode="ask-untrusted", sandboxed=True, root=root, environ={"TZ": ":Asia/Tokyo"}
    )
    assert facts.time_zone == "Asia/Tokyo"
