"""The jail model-authored commands run in on this machine: one bubblewrap profile (what it shows, hides and
lets write) for foreground, background, worktree and read-only runs, and ``run_sandboxed``, the body of
``seepient sandbox run``."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from seepient.execution.control_guard import ControlGuard, Repair, repairs_note
from seepient.execution.control_watch import ControlWatch
from seepient.execution.environment import scrubbed_environment
from seepient.execution.plain_command import plain_words, program_environment
from seepient.execution.process import ProcessResult, pidfds_work, run_process, watch_to_end
from seepient.execution.sandbox.bwrap import (
    BwrapSandbox,
    SandboxStatus,
    command_tail,
    protected_workspace_paths,
)
from seepient.execution.sandbox.host_view import HostView, find_installations, host_view
from seepient.execution.standby_jail import JailStandby, locales_named
from seepient.net.egress_proxy import EgressProxy
from seepient.protocol.outcomes import BackgroundOutput, ShellOutcome
from seepient.protocol.refusals import SandboxUnavailable

_Outcome = TypeVar("_Outcome", ShellOutcome, BackgroundOutput)


def shell_argv(command_line: str) -> list[str]:
    """How a command line is run: ``bash -c``, or ``sh -c`` where bash is absent."""
    return [_shell(os.environ.get("PATH")), "-c", command_line]


@functools.lru_cache(maxsize=4)
def _shell(search_path: str | None) -> str:
    # Looked up once per PATH rather than at every step.
    return shutil.which("bash", path=search_path) or shutil.which("sh", path=search_path) or "/bin/sh"


def require_directory(cwd: Path) -> None:
    """Raise ``FileNotFoundError`` for a missing working directory: without the sandbox nothing else would say
    that this is what failed."""
    if not cwd.is_dir():
        raise FileNotFoundError(errno.ENOENT, "the working directory does not exist", str(cwd))


def home_of(environ: Mapping[str, str]) -> Path:
    raw = environ.get("HOME")
    return Path(raw) if raw else Path.home()


def with_repairs(outcome: _Outcome, repairs: list[Repair]) -> _Outcome:
    """``outcome`` with a note on its stderr naming what the control guard undid after the command."""
    if not repairs:
        return outcome
    note = repairs_note(repairs)
    return outcome.model_copy(update={"stderr": f"{outcome.stderr.rstrip()}\n[{note}]\n".lstrip()})


@dataclass(frozen=True)
class Jail:
    """One workspace's jail: the sandbox and what it shows of this machine.

    ``environ`` is the environment Seepient runs with (whence the scrubbed ``env`` every jailed process gets);
    ``readable`` and ``hidden`` come from the user's own settings only (never a project's): folders of the
    home shown back in the jail, and more locations hidden there. ``sandbox_mode="off"`` runs commands
    directly (with the scrubbed environment) and must come from an explicit user choice.
    """

    workspace: Path
    seepient_home: Path
    home: Path
    environ: Mapping[str, str]
    env: Mapping[str, str]
    sandbox_mode: Literal["auto", "off"]
    bwrap: BwrapSandbox
    readable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    max_output_bytes: int = 1_000_000

    @classmethod
    def build(
        cls,
        workspace: Path,
        *,
        seepient_home: Path,
        sandbox_mode: Literal["auto", "off"] = "auto",
        home: Path | None = None,
        environ: Mapping[str, str] | None = None,
        bwrap: BwrapSandbox | None = None,
        readable: Sequence[Path] = (),
        hidden: Sequence[Path] = (),
        max_output_bytes: int = 1_000_000,
    ) -> Jail:
        environ = dict(os.environ if environ is None else environ)
        home = home if home is not None else home_of(environ)
        return cls(
            workspace=workspace.resolve(),
            seepient_home=seepient_home,
            home=home,
            environ=environ,
            env=scrubbed_environment(environ, home=str(home)),
            sandbox_mode=sandbox_mode,
            bwrap=bwrap or BwrapSandbox(),
            readable=tuple(readable),
            hidden=tuple(hidden),
            max_output_bytes=max_output_bytes,
        )

    def view(self, root: Path) -> HostView:
        """What of this machine the jail of ``root`` shows and hides: the same for every jailed process."""
        return host_view(
            home=self.home,
            seepient_home=self.seepient_home,
            environ=self.environ,
            workspace=root,
            readable=self.readable,
            hidden=self.hidden,
        )

    def warm_view(self, root: Path) -> None:
        """Do now the costly part of ``view(root)`` (``find_installations``), from a thread."""
        find_installations(self.home, self.seepient_home, self.environ, root, self.readable, self.hidden)

    def line_argv(
        self, command_line: str, cwd: Path, *, view: HostView | None = None
    ) -> tuple[list[str], dict[str, str]]:
        """How the jail runs a command line at ``cwd``: a line of plain words naming a program the jail shows
        as that program, with the variables bash would have set for it (``plain_command.py``); any other line,
        and every line with the sandbox off, with ``bash -c``. The argv and the variables to add. ``view`` is
        the workspace's view the command will run with (looked up when not given)."""
        words = plain_words(command_line) if self.sandbox_mode != "off" else None
        if words is not None:
            real_cwd = os.path.realpath(cwd)
            added = program_environment(
                words[0],
                search_path=self.env.get("PATH", ""),
                cwd=real_cwd,
                env=self.env,
                shows=self.bwrap.shows(workspace=self.workspace, view=view or self.view(self.workspace)),
            )
            if added is not None:
                return list(words), added
        return shell_argv(command_line), {}

    def cwd_of(self, cwd: str) -> Path:
        """A command's working directory, relative ones taken from the workspace root."""
        return Path(cwd) if os.path.isabs(cwd) else self.workspace / cwd

    async def command_argv(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        network: bool = False,
        egress: EgressProxy | None = None,
        extra_binds: Sequence[tuple[Path, Path]] = (),
    ) -> tuple[list[str], dict[str, str]]:
        """The bubblewrap command line and environment that run ``argv`` jailed in the workspace (at ``cwd``,
        default its root): one profile for foreground, background and worktree commands. With a started
        ``egress`` proxy (and ``network``), the command gets its own empty network namespace whose only way out
        is that proxy. ``extra_binds`` are more ``(host, jail)`` folders it may write. Raises
        ``SandboxUnavailable`` when bubblewrap cannot start."""
        # The probe runs once per process, in a thread; later commands read its answer here rather than
        # hand a thread the lookup of a cached value.
        _require_available(self.bwrap.probed() or await asyncio.to_thread(self.bwrap.probe))
        return self._jailed_argv(argv, cwd=cwd, network=network, egress=egress, extra_binds=extra_binds)

    def _jailed_argv(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | None,
        network: bool,
        egress: EgressProxy | None,
        extra_binds: Sequence[tuple[Path, Path]],
        extra_env: Mapping[str, str] | None = None,
        view: HostView | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        root = self.workspace
        env = {**self.env, **(extra_env or {})}
        binds = list(extra_binds)
        if network and egress is not None:
            argv, network = egress.sandbox_argv(argv), False
            env = {**env, **egress.sandbox_env()}
            binds += egress.sandbox_binds()
        full_argv = self.bwrap.command_argv(
            argv,
            workspace=root,
            cwd=(cwd or root).resolve(),
            network=network,
            view=view or self.view(root),
            read_only_inside=protected_workspace_paths(root),
            env=env,
            extra_binds=binds,
        )
        return full_argv, env

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout_s: float | None,
        network: bool = False,
        egress: EgressProxy | None = None,
        extra_binds: Sequence[tuple[Path, Path]] = (),
        extra_env: Mapping[str, str] | None = None,
        view: HostView | None = None,
        standby: JailStandby | None = None,
    ) -> ShellOutcome:
        """Run ``argv`` to its end at ``cwd`` (``command_argv``'s options), capturing its output; with the
        sandbox off, directly with the scrubbed environment (and the host's network). ``extra_env`` is added
        to the scrubbed environment (``line_argv``'s variables); ``view`` is the one ``line_argv`` was given.
        With a ``standby``, a command without network runs in its standby jail when that is the same jail,
        and a standby jail is set up for the next one. Raises ``SandboxUnavailable`` when bubblewrap cannot
        start."""
        if self.sandbox_mode == "off":
            require_directory(cwd)
            result = await run_process(
                list(argv),
                env={**self.env, **(extra_env or {})},
                cwd=cwd,
                timeout_s=timeout_s,
                max_output_bytes=self.max_output_bytes,
            )
            return result.shell_outcome("none")
        # A foreground command does not wait for the probe: bubblewrap sets up all of the jail or runs nothing,
        # so the command itself finds out whether it can start. Only when this process has no answer yet and
        # the command fails is the probe asked whether bubblewrap was what failed (and why). A missing bwrap
        # is known without running anything.
        status = self.bwrap.probed() or (self.bwrap.probe() if self.bwrap.bwrap is None else None)
        if status is not None:
            _require_available(status)
        if standby is not None and not network and egress is None and not extra_binds and pidfds_work():
            return await self._run_with_standby(
                argv,
                cwd=cwd,
                timeout_s=timeout_s,
                extra_env=extra_env,
                view=view,
                standby=standby,
                status=status,
            )
        full_argv, env = self._jailed_argv(
            argv,
            cwd=cwd,
            network=network,
            egress=egress,
            extra_binds=extra_binds,
            extra_env=extra_env,
            view=view,
        )
        result = await self._run_checked(full_argv, env=env, timeout_s=timeout_s, status=status)
        return result.shell_outcome("bwrap")

    async def _run_checked(
        self,
        full_argv: list[str],
        *,
        env: Mapping[str, str],
        timeout_s: float | None,
        status: SandboxStatus | None,
    ) -> ProcessResult:
        try:
            result = await run_process(
                full_argv, env=env, timeout_s=timeout_s, max_output_bytes=self.max_output_bytes
            )
        except OSError:
            if status is None:
                _require_available(await asyncio.to_thread(self.bwrap.probe))
            raise
        if status is None and result.exit_code != 0:
            _require_available(await asyncio.to_thread(self.bwrap.probe))
        return result

    def start_standby(self, standby: JailStandby) -> None:
        """Set ``standby`` up with the jail a command without network would get now (see ``_run_with_standby``),
        when bubblewrap can run here as far as this process knows."""
        if self.sandbox_mode == "off" or self.bwrap.bwrap is None or not pidfds_work():
            return
        status = self.bwrap.probed()
        if status is not None and not status.available:
            return
        self._refill(standby, self._standby_layout(self.view(self.workspace)))

    def _refill(self, standby: JailStandby, layout: Sequence[str]) -> None:
        """Set ``standby`` up with ``layout``, its bash loading the locales this jail's commands are given."""
        standby.refill(layout, locales=locales_named(self.env))

    def _standby_layout(self, view: HostView) -> list[str]:
        root = self.workspace
        return self.bwrap.layout_argv(
            workspace=root, network=False, view=view, read_only_inside=protected_workspace_paths(root)
        )

    async def _run_with_standby(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout_s: float | None,
        extra_env: Mapping[str, str] | None,
        view: HostView | None,
        standby: JailStandby,
        status: SandboxStatus | None,
    ) -> ShellOutcome:
        """``run`` for a command without network: in the standby jail when it is this command's jail (see
        ``standby_jail.py``), else in one of its own; either way a standby is then set up for the next."""
        view = view or self.view(self.workspace)
        layout = self._standby_layout(view)
        env = {**self.env, **(extra_env or {})}
        real_cwd = cwd.resolve()
        command_env = {**view.env, **env}
        started = time.monotonic()
        process = standby.take(layout, argv=argv, cwd=real_cwd, env=command_env)
        if process is not None:
            # The next command's jail is set up once this one has ended, while the result goes back and the
            # model answers: set up while the command ran, bubblewrap's work competed with the command's for
            # the processor (about 0.3 ms a step on two cores). Unless the model answers faster than a jail is
            # set up (the standby just taken was that young): then the next command would wait for its jail,
            # which starting it now spares (0.9 ms a step here). It is a jail of its own either way, which no
            # earlier command can reach (its namespaces are new, and every path it mounts on is a mount point
            # in the earlier jail too, which nothing there can rename or remove).
            if standby.needs_head_start:
                self._refill(standby, layout)
            result = await watch_to_end(
                process, timeout_s=timeout_s, max_output_bytes=self.max_output_bytes, started=started
            )
            self._refill(standby, layout)
            if status is None and result.exit_code != 0:
                # As for a jail of its own: a failure might have been bubblewrap's (setting up the standby).
                _require_available(await asyncio.to_thread(self.bwrap.probe))
        else:
            full_argv = layout + command_tail(argv, cwd=real_cwd, env=command_env)
            result = await self._run_checked(full_argv, env=env, timeout_s=timeout_s, status=status)
            # Here bubblewrap is known to work: it ran the command, or the probe said it can.
            self._refill(standby, layout)
        return result.shell_outcome("bwrap")

    def read_only(self, argv: list[str], root: Path) -> tuple[list[str], dict[str, str]] | None:
        """``argv`` wrapped to run jailed with ``root`` read-only, no network and the scrubbed environment: how
        Seepient's own reads of a repository (git status for the prompt) run. None when the sandbox is off or
        cannot start here, for the caller to do without (nothing that reads the workspace runs unjailed)."""
        if self.sandbox_mode == "off" or not self.bwrap.probe().available:
            return None
        root = root.resolve()
        env = dict(self.env)
        full_argv = self.bwrap.command_argv(
            argv,
            workspace=root,
            cwd=root,
            network=False,
            read_only_binds=_linked_git_dirs(root),
            view=self.view(root),
            read_only_inside=(),
            env=env,
            workspace_read_only=True,
        )
        return full_argv, env


async def run_sandboxed(
    argv: Sequence[str],
    *,
    workspace: Path,
    cwd: Path | None = None,
    network: bool = False,
    timeout_s: float | None = None,
    seepient_home: Path | None = None,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    max_output_bytes: int = 1_000_000,
    stdio: Literal["capture", "inherit"] = "capture",
    sandbox: BwrapSandbox | None = None,
    egress: EgressProxy | None = None,
    readable: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
) -> ShellOutcome:
    """Run ``argv`` as it is (no shell) in the sandbox: the body of ``seepient sandbox run -- CMD``.

    With ``stdio="inherit"`` the command reads and writes this process's own standard streams and the
    outcome's stdout/stderr are empty; its exit code is passed back either way. Raises
    ``SandboxUnavailable`` with the reason and the fix when bubblewrap cannot start.

    With a started ``egress`` proxy (and ``network``), the command gets its own empty network namespace
    whose only way out is that proxy, instead of the host's network. What the command leaves for programs
    outside the jail is undone afterwards, as after the executor's commands.
    """
    if not argv:
        raise ValueError("no command to run")
    environ = os.environ if environ is None else environ
    home = home if home is not None else home_of(environ)
    if seepient_home is None:
        raw = environ.get("SEEPIENT_HOME")
        seepient_home = Path(raw).expanduser() if raw else home / ".seepient"
    jail = Jail.build(
        workspace,
        seepient_home=seepient_home,
        home=home,
        environ=environ,
        bwrap=sandbox,
        readable=readable,
        hidden=hidden,
    )
    full_argv, env = await jail.command_argv(argv, cwd=cwd, network=network, egress=egress)
    # Whoever runs it, what a jailed command leaves for programs outside the jail is undone afterwards.
    watch = ControlWatch(
        ControlGuard(workspace, quarantine_root=seepient_home / "quarantine"),
        journal_dir=seepient_home / "control",
    )
    await asyncio.to_thread(watch.before_command)
    try:
        result = await run_process(
            full_argv, env=env, timeout_s=timeout_s, max_output_bytes=max_output_bytes, stdio=stdio
        )
    finally:
        repairs = await asyncio.to_thread(watch.after_command)
    return with_repairs(result.shell_outcome("bwrap"), repairs)


def _require_available(status: SandboxStatus) -> None:
    if not status.available:
        raise SandboxUnavailable(status.message)


def _linked_git_dirs(root: Path) -> list[Path]:
    """The git directory a checkout's ``.git`` file names (a linked worktree, a submodule) and its common
    directory: git reads them, so a read-only jail of the checkout must show them too."""
    dot_git = root / ".git"
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace") if dot_git.is_file() else ""
    except OSError:
        return []
    if not text.startswith("gitdir:"):
        return []
    git_dir = (root / text.removeprefix("gitdir:").strip()).resolve()
    found = [git_dir] if git_dir.is_dir() and not git_dir.is_relative_to(root) else []
    with contextlib.suppress(OSError):
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
        if common.is_dir() and not common.is_relative_to(root) and common not in found:
            found.insert(0, common)
    return found
