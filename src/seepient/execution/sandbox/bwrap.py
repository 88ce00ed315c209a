"""The bubblewrap sandbox on Linux: a read-only view of the host with a writable workspace, a private /tmp,
no network unless asked, the home folders hidden (``host_view.py`` says what is shown back) and a read-only copy
of the workspace's security state."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from seepient.execution.host_programs import host_program
from seepient.execution.sandbox.host_view import HostView, path_order, text_within

_PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class SandboxStatus:
    """Whether bubblewrap can start here; when not, ``reason`` says what failed and ``fix`` how to repair it."""

    available: bool
    reason: str = ""
    fix: str = ""
    bwrap: str | None = None

    @property
    def message(self) -> str:
        if self.available:
            return f"bubblewrap sandbox available ({self.bwrap})"
        return f"the bubblewrap sandbox cannot start: {self.reason}. {self.fix}"


def _turn_off_hint() -> str:
    return "Or run without a sandbox, knowingly, with `--sandbox off`."


def _diagnose(stderr: str, bwrap: str) -> SandboxStatus:
    text = stderr.strip() or "bwrap exited with an error and printed nothing"
    lowered = text.lower()
    if any(
        marker in lowered
        for marker in (
            "no permissions to creat",
            "creating new namespace failed",
            "setting up uid map",
            "operation not permitted",
            "permission denied",
        )
    ):
        fix = (
            "Unprivileged user namespaces look disabled. Enable them with "
            "`sysctl -w kernel.unprivileged_userns_clone=1` (Debian and older Ubuntu), or on Ubuntu 23.10+ with "
            "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (or an AppArmor profile that allows "
            "bwrap); inside a container, allow user namespaces (e.g. a seccomp/AppArmor profile that permits "
            f"them). {_turn_off_hint()}"
        )
        return SandboxStatus(False, f"bwrap could not create namespaces ({text})", fix, bwrap)
    return SandboxStatus(
        False, f"bwrap failed ({text})", f"Check that {bwrap} works. {_turn_off_hint()}", bwrap
    )


def protected_workspace_paths(workspace: Path) -> list[Path]:
    """The workspace's own security state, to be mounted read-only inside the sandbox.

    ``.seepient`` holds project settings (permission rules, hooks), so it is created when missing: an empty
    read-only directory is the only way to stop a sandboxed command from creating one. Git's hooks and
    config run code on the host the next time a person uses git here, so they are protected too, and made
    to exist when the repository lacks them for the same reason.
    """
    root = workspace.resolve()
    protected: list[Path] = []
    project_dir = root / ".seepient"
    if not project_dir.is_symlink():
        with contextlib.suppress(OSError):
            project_dir.mkdir(exist_ok=True)
    protected.append(project_dir)
    git = root / ".git"
    git_dirs: list[Path] = []
    if git.is_symlink() or git.is_file():
        # A worktree or submodule: the `.git` file points at the real git directory, and must not be
        # repointed; the directory it names is protected too when it lies inside the workspace.
        protected.append(git)
        git_dirs += _linked_git_dirs(git, root)
    elif git.is_dir():
        git_dirs.append(git)
    for git_dir in git_dirs:
        hooks, config = git_dir / "hooks", git_dir / "config"
        if hooks.is_symlink() or config.is_symlink():
            # A mount lands on a symlink's target and leaves the link itself replaceable, so the targets
            # are protected and the git directory holding the links becomes read-only as a whole.
            protected += [git_dir, hooks, config]
            continue
        with contextlib.suppress(OSError):
            if not hooks.exists():
                hooks.mkdir()
            if not config.exists():
                config.touch()
        protected += [hooks, config]
    return protected


def _linked_git_dirs(git_file: Path, root: Path) -> list[Path]:
    try:
        first_line = git_file.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return []
    if not first_line.startswith("gitdir:"):
        return []
    target = (git_file.parent / first_line.removeprefix("gitdir:").strip()).resolve()
    found = [target] if target.is_relative_to(root) and target.is_dir() else []
    commondir_file = target / "commondir"
    if found and commondir_file.is_file():
        common = (target / commondir_file.read_text(encoding="utf-8").strip()).resolve()
        if common.is_relative_to(root) and common.is_dir() and common != target:
            found.append(common)
    return found


def command_tail(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> list[str]:
    """What follows a ``layout_argv``: the command's environment, its working directory and the command."""
    out: list[str] = []
    for name, value in env.items():
        out += ["--setenv", name, value]
    return [*out, "--chdir", str(cwd), "--", *argv]


def _within(path: Path, roots: Sequence[Path]) -> bool:
    return text_within(str(path), [str(root) for root in roots])


class BwrapSandbox:
    """Builds bubblewrap command lines and knows whether bubblewrap can run on this machine."""

    _probe_cache: ClassVar[dict[str, SandboxStatus]] = {}
    _probe_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, bwrap: str | None = None) -> None:
        # $SEEPIENT_BWRAP names a bubblewrap outside the system folders (the user's own environment, never
        # the workspace's); otherwise it is looked for where a planted one cannot be (host_programs.py).
        self.bwrap = bwrap if bwrap is not None else os.environ.get("SEEPIENT_BWRAP") or host_program("bwrap")
        self._hidden_memo: tuple[HostView, tuple[object, ...], tuple[tuple[Path, bool], ...]] | None = None

    def probe(self) -> SandboxStatus:
        """Run ``bwrap … true`` once per bwrap binary and process; later calls return the cached answer."""
        if self.bwrap is None:
            return SandboxStatus(
                False,
                "bubblewrap (bwrap) is not installed",
                f"Install it with `apt-get install bubblewrap` (or your distribution's package). {_turn_off_hint()}",
            )
        with self._probe_lock:
            cached = self._probe_cache.get(self.bwrap)
            if cached is None:
                cached = self._run_probe(self.bwrap)
                self._probe_cache[self.bwrap] = cached
            return cached

    def probed(self) -> SandboxStatus | None:
        """The answer ``probe`` already has, without waiting for (or starting) a probe."""
        return self._probe_cache.get(self.bwrap) if self.bwrap is not None else None

    @staticmethod
    def _run_probe(bwrap: str) -> SandboxStatus:
        true = host_program("true") or "/bin/true"
        argv = [
            bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
            "--", true,
        ]  # fmt: skip
        try:
            completed = subprocess.run(
                argv, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL
            )
        except FileNotFoundError:
            return SandboxStatus(
                False,
                f"{bwrap} does not exist",
                f"Install bubblewrap with `apt-get install bubblewrap`. {_turn_off_hint()}",
            )
        except PermissionError as exc:
            return SandboxStatus(
                False, f"{bwrap} cannot be executed ({exc.strerror})", _turn_off_hint(), bwrap
            )
        except subprocess.TimeoutExpired:
            return SandboxStatus(
                False, f"`{bwrap} … true` did not finish in {_PROBE_TIMEOUT_S:.0f} s", _turn_off_hint(), bwrap
            )
        if completed.returncode != 0:
            return _diagnose(completed.stderr, bwrap)
        return SandboxStatus(True, bwrap=bwrap)

    def command_argv(
        self,
        argv: Sequence[str],
        *,
        workspace: Path,
        cwd: Path,
        network: bool,
        view: HostView,
        read_only_inside: Sequence[Path],
        env: Mapping[str, str],
        extra_binds: Sequence[tuple[Path, Path]] = (),
        workspace_read_only: bool = False,
        read_only_binds: Sequence[Path] = (),
    ) -> list[str]:
        """The full ``bwrap`` command line that runs ``argv`` jailed to ``workspace``: ``layout_argv`` (its
        arguments are the same) followed by ``command_tail``, with the view's variables under ``env``."""
        layout = self.layout_argv(
            workspace=workspace,
            network=network,
            view=view,
            read_only_inside=read_only_inside,
            extra_binds=extra_binds,
            workspace_read_only=workspace_read_only,
            read_only_binds=read_only_binds,
        )
        return layout + command_tail(argv, cwd=cwd, env={**view.env, **env})

    def layout_argv(
        self,
        *,
        workspace: Path,
        network: bool,
        view: HostView,
        read_only_inside: Sequence[Path],
        extra_binds: Sequence[tuple[Path, Path]] = (),
        workspace_read_only: bool = False,
        read_only_binds: Sequence[Path] = (),
    ) -> list[str]:
        """The ``bwrap`` command line up to the command: the jail's mounts, namespaces and an empty environment.

        ``extra_binds`` are ``(host, sandbox)`` paths bound read-write after every other mount (the egress
        proxy's socket directory); the sandbox path should lie on a tmpfs bubblewrap made, such as /dev.

        ``workspace_read_only`` mounts the workspace read-only (a language server reading model-written code);
        ``read_only_binds`` are host paths shown read-only even where the private /tmp or /run would cover
        them (a program installed under /tmp).

        Raises ``ValueError`` when the workspace itself lies inside a hidden location.
        """
        if self.bwrap is None:
            raise FileNotFoundError("bubblewrap (bwrap) is not installed")
        root = workspace.resolve()
        root_text = str(root)
        for path, _ in view.hidden:
            if text_within(root_text, [str(path)]):
                raise ValueError(
                    f"the workspace {root} lies inside the sensitive location {path}; refusing to sandbox it"
                )
        run_mounts, private, shown_binds, hidden_now = self._layout(view, root, read_only_binds)
        hidden_paths = [path for path, _ in hidden_now]

        # Order matters: bubblewrap applies mounts in sequence and a later mount shadows an earlier one.
        # The private /tmp and /run come before the workspace bind because workspaces often live under /tmp;
        # the homes are hidden before the tool folders inside them are shown back, and both before the
        # workspace, which may itself lie in a home.
        out = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        out += run_mounts
        for home in view.hidden_homes:
            out += ["--tmpfs", str(home)]
        for path in shown_binds:
            out += ["--ro-bind", str(path), str(path)]
        if workspace_read_only:
            # Nothing inside is writable, so the pins and read-only mounts of the security state are moot.
            out += ["--ro-bind", str(root), str(root)]
        else:
            out += ["--bind", str(root), str(root)]
            out += self._protect_inside(root, read_only_inside, hidden_paths)
        for path, is_dir in hidden_now:
            if is_dir:
                out += ["--tmpfs", str(path), "--remount-ro", str(path)]
            else:
                out += ["--ro-bind", "/dev/null", str(path)]
        for host_path, inside in extra_binds:
            out += ["--bind", str(host_path), str(inside)]
        out += ["--unshare-all"]
        if network:
            out += ["--share-net"]
        out += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
        return out

    def shows(
        self, *, workspace: Path, view: HostView, read_only_binds: Sequence[Path] = ()
    ) -> Callable[[str], bool]:
        """Whether the jail ``command_argv`` builds from the same arguments shows a path (absolute and
        normalised, with no link among its folders) as this machine has it. False where unsure (below the private
        /tmp and /run, the hidden homes and every hidden location, unless the workspace or a folder shown back
        holds it and no hidden location does)."""
        root = workspace.resolve()
        _, private, shown_binds, hidden_now = self._layout(view, root, read_only_binds)
        hidden = [str(path) for path, _ in hidden_now]
        bound = [str(root), *map(str, shown_binds)]
        private_text = [str(path) for path in private]

        def shown(path: str) -> bool:
            if text_within(path, hidden):
                return False
            if text_within(path, bound):
                return True
            return not text_within(path, private_text) and view.visible(Path(path))

        return shown

    def _layout(
        self, view: HostView, root: Path, read_only_binds: Sequence[Path]
    ) -> tuple[list[str], list[Path], list[Path], tuple[tuple[Path, bool], ...]]:
        """The private /run's mounts, the private folders, the folders shown back and what must be hidden."""
        run_mounts = self._private_run()
        private = [Path("/tmp"), *([Path("/run")] if run_mounts else [])]
        shown_binds = [*view.shown, *read_only_binds]
        return run_mounts, private, shown_binds, self._hidden_now(view, root, shown_binds, private)

    def _hidden_now(
        self, view: HostView, root: Path, shown_binds: list[Path], private: list[Path]
    ) -> tuple[tuple[Path, bool], ...]:
        """Only what the jail would otherwise show needs hiding: a location under the private /tmp and /run or
        a hidden home is out of sight unless the workspace or a folder shown back holds it. Pure path
        arithmetic over a few hundred candidates, the same for every step that shares the view (host_view
        reuses one for a run of steps), so the last answer is kept."""
        key = (root, tuple(shown_binds), tuple(private))
        last = self._hidden_memo
        if last is not None and last[0] is view and last[1] == key:
            return last[2]
        hidden_now = tuple(
            (path, is_dir)
            for path, is_dir in view.hidden
            if _within(path, [root, *shown_binds]) or (not _within(path, private) and view.visible(path))
        )
        self._hidden_memo = (view, key, hidden_now)
        return hidden_now

    @staticmethod
    def _private_run() -> list[str]:
        if not Path("/run").is_dir() or Path("/run").is_symlink():
            return []
        mounts = ["--tmpfs", "/run"]
        # Name resolution still has to work when network is granted, and resolv.conf often points into /run.
        resolver = Path(os.path.realpath("/etc/resolv.conf"))
        if resolver.is_relative_to("/run") and resolver.exists():
            mounts += ["--ro-bind", str(resolver.parent), str(resolver.parent)]
        return mounts

    @staticmethod
    def _protect_inside(root: Path, read_only_inside: Sequence[Path], hidden: Sequence[Path]) -> list[str]:
        # On the paths' text (real paths, so normalised): see ``host_view.text_within``.
        top = str(root)
        below_top = top if top.endswith("/") else top + "/"
        hidden_text = [str(path) for path in hidden]
        targets: set[str] = set()
        for candidate in read_only_inside:
            path = os.path.realpath(candidate)
            if (
                path == top
                or not path.startswith(below_top)
                or not os.path.lexists(path)
                or text_within(path, hidden_text)
            ):
                continue
            targets.add(path)
        # Each directory between the workspace root and a protected path is bound onto itself first. A mount
        # point cannot be renamed or removed, so `mv .git x && mkdir -p .git/hooks` cannot route around the
        # read-only hooks directory; the self-binds stay writable so git still works inside.
        pins: set[str] = set()
        for path in targets:
            parent = os.path.dirname(path)
            while parent != top and parent.startswith(below_top):
                pins.add(parent)
                parent = os.path.dirname(parent)
        mounts: list[str] = []
        for pin in sorted(pins, key=path_order):
            mounts += ["--bind", pin, pin]
        for path in sorted(targets, key=path_order):
            mounts += ["--ro-bind", path, path]
        return mounts
