"""Facts about where the agent runs: directory, OS, shell, time and zone, container, git state, sandbox, mode.

Detection reads files under a ``root`` parameter (``/`` in production) so tests can build a fake root.
Git state comes from the files in ``.git`` (branch) and from ``git status`` run with every repository-
configured program turned off (fsmonitor, attribute filters, hooks), because a repository found on disk
must not get to run code just because Seepient started in it.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

_EMPTY_TREE_SHA1 = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_CGROUP_HINTS = (
    ("kubepods", "kubernetes"),
    ("libpod", "podman"),
    ("docker", "docker"),
    ("containerd", "containerd"),
    ("buildkit", "buildkit"),
    ("lxc", "lxc"),
)
_MOUNT_HINTS = (
    ("/kubelet/pods/", "kubernetes"),
    ("/containers/storage/overlay", "podman"),
    ("/docker/containers/", "docker"),
)
_KIND_ORDER = ("kubernetes", "podman", "docker", "containerd", "lxc", "systemd-nspawn", "buildkit")
_MODE_MEANING = {
    "always-ask": "the user approves every file change and shell command",
    "ask-untrusted": "reads and known-safe commands inside the workspace run without asking; other changes "
    "and commands need the user's approval",
    "autonomous-trusted": "actions policy allows run without asking; denied actions stay denied",
}


@dataclass(frozen=True)
class ContainerInfo:
    """``kind`` is the most specific runtime found (``kubernetes`` beats ``docker`` for a pod on Docker);
    ``evidence`` lists every hint, for people checking why."""

    detected: bool
    kind: str | None = None
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class GitState:
    """``branch`` is None on a detached HEAD (``head`` then holds the commit); ``dirty`` is None when git
    could not say (no git binary, a timeout, a repository git refuses)."""

    root: Path
    branch: str | None
    head: str | None
    dirty: bool | None


@dataclass(frozen=True)
class EnvironmentFacts:
    working_directory: Path
    workspace: Path
    os_name: str
    shell: str
    login_shell: str | None
    now: datetime
    time_zone: str
    container: ContainerInfo
    git: GitState | None
    sandboxed: bool
    consent_mode: str
    extra: dict[str, str] = field(default_factory=dict)

    def render(self) -> str:
        lines = [f"- Working directory: {self.working_directory}"]
        if self.workspace != self.working_directory:
            lines.append(f"- Workspace root (writes stay inside it): {self.workspace}")
        else:
            lines.append("- The working directory is the workspace root; writes stay inside it")
        lines.append(f"- Operating system: {self.os_name}")
        shell = f"- Shell: the shell tool runs commands with {self.shell}"
        if self.login_shell and Path(self.login_shell).name != self.shell:
            shell += f" (the user's login shell is {self.login_shell})"
        lines.append(shell)
        offset = self.now.strftime("%z")
        offset = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC offset unknown"
        lines.append(f"- Current time: {self.now.strftime('%Y-%m-%d %H:%M')} ({self.time_zone}, {offset})")
        if self.container.detected:
            lines.append(f"- Seepient runs inside a container ({self.container.kind})")
        else:
            lines.append("- Seepient runs directly on the host, not in a container")
        lines.append(f"- Git: {self._git_text()}")
        if self.sandboxed:
            lines.append("- Sandbox: shell commands run in a sandbox with no network access")
        else:
            lines.append("- Sandbox: OFF, shell commands run WITHOUT a sandbox, directly on this machine")
        meaning = _MODE_MEANING.get(self.consent_mode, "")
        lines.append(f"- Consent mode: {self.consent_mode}" + (f" ({meaning})" if meaning else ""))
        lines.extend(f"- {key}: {value}" for key, value in self.extra.items())
        return "\n".join(lines)

    def _git_text(self) -> str:
        git = self.git
        if git is None:
            return "not a git repository"
        where = "" if git.root == self.working_directory else f", repository root {git.root}"
        if git.branch:
            head = f"on branch {git.branch}"
        elif git.head:
            head = f"detached HEAD at {git.head[:12]}"
        else:
            head = "no commits yet"
        state = {True: "uncommitted changes", False: "clean working tree", None: "working tree state unknown"}
        return f"{head}, {state[git.dirty]}{where}"

    def as_dict(self) -> dict[str, Any]:
        git = None
        if self.git is not None:
            git = {
                "root": str(self.git.root),
                "branch": self.git.branch,
                "head": self.git.head,
                "dirty": self.git.dirty,
            }
        return {
            "working_directory": str(self.working_directory),
            "workspace": str(self.workspace),
            "os": self.os_name,
            "shell": self.shell,
            "login_shell": self.login_shell,
            "time": self.now.isoformat(timespec="seconds"),
            "time_zone": self.time_zone,
            "container": {
                "detected": self.container.detected,
                "kind": self.container.kind,
                "evidence": list(self.container.evidence),
            },
            "git": git,
            "sandboxed": self.sandboxed,
            "consent_mode": self.consent_mode,
        }


def _read(path: Path, limit: int = 256 * 1024) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def detect_container(root: Path = Path("/"), environ: Mapping[str, str] | None = None) -> ContainerInfo:
    """Whether this process runs in a container, judged from files under ``root`` and the environment."""
    env = os.environ if environ is None else environ
    kinds: list[str] = []
    evidence: list[str] = []

    def found(kind: str, why: str) -> None:
        kinds.append(kind)
        evidence.append(why)

    if os.path.lexists(root / ".dockerenv"):
        found("docker", "/.dockerenv exists")
    containerenv = root / "run" / ".containerenv"
    if os.path.lexists(containerenv):
        text = _read(containerenv) or ""
        engine = "podman"
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "engine" and value.strip().strip('"'):
                engine = value.strip().strip('"').split("-", 1)[0] or "podman"
        found(engine, "/run/.containerenv exists")
    if env.get("KUBERNETES_SERVICE_HOST"):
        found("kubernetes", "KUBERNETES_SERVICE_HOST is set")
    if os.path.isdir(root / "var" / "run" / "secrets" / "kubernetes.io"):
        found("kubernetes", "/var/run/secrets/kubernetes.io exists")
    marker = env.get("container")
    if marker:
        found(marker, f"container={marker} is set")
    systemd = _read(root / "run" / "systemd" / "container")
    if systemd and systemd.strip():
        found(systemd.strip(), f"/run/systemd/container says {systemd.strip()}")
    if not kinds:
        for name in ("1", "self"):
            cgroup = _read(root / "proc" / name / "cgroup")
            if cgroup:
                for hint, kind in _CGROUP_HINTS:
                    if hint in cgroup:
                        found(kind, f"/proc/{name}/cgroup mentions {hint}")
                        break
            if kinds:
                break
    if not kinds:
        mounts = _read(root / "proc" / "self" / "mountinfo", limit=1024 * 1024)
        if mounts:
            for hint, kind in _MOUNT_HINTS:
                if hint in mounts:
                    found(kind, f"/proc/self/mountinfo mentions {hint}")
                    break
    if not kinds:
        return ContainerInfo(detected=False)
    ranked = sorted(set(kinds), key=lambda k: _KIND_ORDER.index(k) if k in _KIND_ORDER else len(_KIND_ORDER))
    return ContainerInfo(detected=True, kind=ranked[0], evidence=tuple(evidence))


def _git_dir(repository_root: Path) -> Path | None:
    dot_git = repository_root / ".git"
    if dot_git.is_dir():
        return dot_git
    text = _read(dot_git, limit=4096)
    if text and text.startswith("gitdir:"):
        target = Path(text[len("gitdir:") :].strip())
        return target if target.is_absolute() else (repository_root / target)
    return None


def read_branch(repository_root: Path) -> tuple[str | None, str | None]:
    """(branch, commit) from ``HEAD`` without running git: a branch name, or None and the detached commit."""
    git_dir = _git_dir(repository_root)
    if git_dir is None:
        return None, None
    head = (_read(git_dir / "HEAD", limit=4096) or "").strip()
    if head.startswith("ref:"):
        ref = head[4:].strip()
        return ref.removeprefix("refs/heads/"), None
    return None, head or None


GitJail = Callable[[list[str], Path], tuple[list[str], dict[str, str]] | None]
"""Wraps git's argv so it runs in the jail (the repository root read-only, scrubbed environment, no network) and returns
the argv and environment to start, or None when no jail can start here. Handed in by the runtime: context
assembly never starts a host process that reads the workspace's own git configuration."""


class GitProbe:
    """``git status`` started early and collected late, so its process runs while rules and skills are read.

    git honours whatever the repository's configuration names: a filter or fsmonitor planted through
    ``commondir`` runs with ``git status``. So git runs only through ``jail`` (the sandbox, with the workspace
    read-only); without one the branch is still read from ``HEAD`` and whether the tree is dirty is unknown.
    The flags below keep git's own work small inside the jail; they are not what makes it safe.
    """

    def __init__(self, repository_root: Path, *, timeout_s: float = 2.0, jail: GitJail | None = None) -> None:
        self.root = repository_root
        self._timeout = timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._error = False
        git = shutil.which("git") if jail is not None else None
        if git is None or jail is None:
            return
        argv = [
            git,
            "-C",
            str(repository_root),
            "--no-optional-locks",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.untrackedCache=false",
            "-c",
            "core.hooksPath=/dev/null",
            f"--attr-source={_EMPTY_TREE_SHA1}",
            "status",
            "--porcelain=v1",
            "--ignore-submodules=all",
            "--untracked-files=normal",
        ]
        try:
            jailed = jail(argv, repository_root)
        except (OSError, ValueError):
            jailed = None
        if jailed is None:
            return
        full_argv, env = jailed
        env = {**env, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        try:
            self._process = subprocess.Popen(
                full_argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        except OSError:
            self._error = True

    def close(self) -> None:
        """Stop the git process when its answer is no longer wanted."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
        if self._process is not None:
            self._process.communicate()

    def result(self) -> GitState:
        branch, head = read_branch(self.root)
        return GitState(root=self.root, branch=branch, head=head, dirty=self._dirty())

    def _dirty(self) -> bool | None:
        process = self._process
        if process is None:
            return None
        try:
            out, _ = process.communicate(timeout=self._timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return None
        if process.returncode != 0:
            return None
        return bool(out.strip())


def _time_zone(now: datetime, root: Path, env: Mapping[str, str]) -> str:
    tz = env.get("TZ", "").lstrip(":")
    if "/" in tz and not tz.startswith("/"):
        return tz
    try:
        target = os.readlink(root / "etc" / "localtime")
    except OSError:
        target = ""
    if "zoneinfo/" in target:
        return target.split("zoneinfo/", 1)[1]
    named = (_read(root / "etc" / "timezone", limit=256) or "").strip()
    if named:
        return named
    return now.tzname() or "local time"


def _os_name(root: Path) -> str:
    system = platform.system() or "unknown"
    text = _read(root / "etc" / "os-release", limit=16 * 1024) if system == "Linux" else None
    pretty = None
    for line in (text or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            pretty = line.split("=", 1)[1].strip().strip('"')
    base = f"{system} {platform.release()} ({platform.machine()})"
    return f"{pretty}, {base}" if pretty else base


def gather_environment(
    workspace: Path,
    *,
    consent_mode: str,
    sandboxed: bool,
    cwd: Path | None = None,
    root: Path = Path("/"),
    environ: Mapping[str, str] | None = None,
    now: datetime | None = None,
    git: GitState | None | GitProbe = None,
) -> EnvironmentFacts:
    """Everything the environment section says. ``git`` is a started ``GitProbe`` to collect, a ready
    ``GitState``, or None for a directory outside any repository."""
    env = os.environ if environ is None else environ
    moment = (now or datetime.now()).astimezone()
    workspace = Path(os.path.abspath(workspace))
    state = git.result() if isinstance(git, GitProbe) else git
    login = env.get("SHELL") or None
    tool_shell = "bash" if shutil.which("bash") else "sh"
    return EnvironmentFacts(
        working_directory=Path(os.path.abspath(cwd)) if cwd is not None else workspace,
        workspace=workspace,
        os_name=_os_name(root),
        shell=tool_shell,
        login_shell=login,
        now=moment,
        time_zone=_time_zone(moment, root, env),
        container=detect_container(root, env),
        git=state,
        sandboxed=sandboxed,
        consent_mode=consent_mode,
    )
