"""Model-authored commands run in the jail: foreground shell lines, background processes and git worktree
operations, each bracketed by the control guard so that what a command plants for programs outside the jail
is undone after it (and, while background processes run, every second)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from seepient.execution.background import BackgroundProcesses
from seepient.execution.control_guard import ControlGuard, Repair
from seepient.execution.control_watch import ControlWatch
from seepient.execution.jail import Jail, require_directory, shell_argv, with_repairs
from seepient.execution.standby_jail import JailStandby
from seepient.execution.worktree import run_worktree_command
from seepient.net.address_policy import AddressPolicy
from seepient.net.egress_proxy import DomainCheck, EgressProxy
from seepient.protocol.actions import Capability, ShellCommand, WorktreeCommand
from seepient.protocol.outcomes import BackgroundOutput, BackgroundStarted, ShellOutcome

if TYPE_CHECKING:
    from seepient.net.fetch import Resolver

_WATCH_INTERVAL_S = 1.0
# A control-guard step that took less than this runs the next time on the event loop itself: handing it to a
# thread and back costs about as much as scanning a small workspace (~0.5 ms a hop here), while a scan this
# short stalls nothing else the loop serves. A workspace whose scan is slower goes back to a thread.
_INLINE_GUARD_S = 0.002

_Result = TypeVar("_Result")


class JailedCommands:
    """The commands one session runs in its jail, and the background processes it started.

    ``network_egress="filtered"``: a command granted the network reaches it only through the egress proxy,
    which applies ``net_policy`` and ``egress_domain_check`` (the Fetch domain rules) to every connection.
    ``foreign_config_allowed`` names the workspace-relative paths a user-level rule lets commands write.
    """

    def __init__(
        self,
        jail: Jail,
        *,
        background: BackgroundProcesses | None = None,
        net_policy: AddressPolicy,
        net_resolver: Resolver | None = None,
        network_egress: str = "host",
        egress_domain_check: DomainCheck | None = None,
        foreign_config_allowed: Callable[[str], bool] | None = None,
    ) -> None:
        self._jail = jail
        self._background = background or BackgroundProcesses()
        self._net_policy = net_policy
        self._net_resolver = net_resolver
        self._network_egress = network_egress
        self._egress_domain_check = egress_domain_check
        # Whatever a command leaves for programs outside the jail (git's control files anywhere in the
        # workspace, other programs' configuration) is undone after it.
        self._control = ControlWatch(
            ControlGuard(
                jail.workspace,
                quarantine_root=jail.seepient_home / "quarantine",
                foreign_allowed=foreign_config_allowed,
            ),
            journal_dir=jail.seepient_home / "control",
            background_running=lambda: self._background.running_count() > 0,
        )
        self._control_recovered = False
        self._control_watch: asyncio.Task[None] | None = None
        # Unknown until one scan has been timed: the first runs in a thread, as a large workspace needs.
        self._guard_inline = False
        # The next foreground command's jail, set up while the model answers (standby_jail.py).
        self._standby = JailStandby(jail.workspace)

    # -- the bracket around every command ---------------------------------------------------------------

    async def _guarded(self, step: Callable[[], _Result]) -> _Result:
        """Run one control-guard step, on the loop while the workspace's scans stay quick, else in a thread."""
        if self._guard_inline:
            return self._timed(step)
        return await asyncio.to_thread(self._timed, step)

    def _timed(self, step: Callable[[], _Result]) -> _Result:
        started = time.perf_counter()
        try:
            return step()
        finally:
            self._guard_inline = time.perf_counter() - started < _INLINE_GUARD_S

    def _recover_and_snapshot(self) -> list[Repair]:
        recovered: list[Repair] = []
        if not self._control_recovered:
            self._control_recovered = True
            recovered = self._control.recover()
        self._control.before_command()
        return recovered

    async def _begin_command(self) -> list[Repair]:
        """Snapshot the control files before a command; the first time, repair what a killed session left."""
        return await self._guarded(self._recover_and_snapshot)

    async def _watch_background(self) -> None:
        """While background commands run, look for planted files every second (they write between steps)."""
        while self._background.running_count() > 0:
            await asyncio.sleep(_WATCH_INTERVAL_S)
            await self._guarded(self._control.sweep)
        await self._guarded(self._control.sweep)
        self._control_watch = None

    async def _egress(self, network: bool, stack: contextlib.AsyncExitStack) -> EgressProxy | None:
        """The filtering proxy a networked command reaches out through, started on ``stack`` so it lives as
        long as whoever closes the stack; None without network or with unfiltered egress."""
        if not network or self._network_egress != "filtered":
            return None
        egress = EgressProxy(
            policy=self._net_policy, resolver=self._net_resolver, domain_check=self._egress_domain_check
        )
        await stack.enter_async_context(egress)
        return egress

    # -- foreground -------------------------------------------------------------------------------------

    def time_guard(self) -> None:
        """Time one scan of the control files now (from a thread, before the first command), so the first
        command's bracket already knows whether its scans may run on the event loop or need a thread."""
        self._timed(self._control.guard.snapshot)

    def anticipate(self) -> None:
        """Set a standby jail up for a foreground command the model has started to ask for, unless one is
        ready: the jail a command without network gets, worked out from this moment's look at the host (the
        command checks it again against its own before using it, see ``standby_jail.py``)."""
        if not self._standby.ready:
            self._jail.start_standby(self._standby)

    async def run_shell(self, command: ShellCommand) -> ShellOutcome:
        """Run a foreground command line; raises ``SandboxUnavailable`` when no sandbox can start."""
        recovered = await self._begin_command()
        try:
            outcome = await self._run_shell(command)
        finally:
            repairs = recovered + await self._guarded(self._control.after_command)
        return with_repairs(outcome, repairs)

    async def _run_shell(self, command: ShellCommand) -> ShellOutcome:
        jail = self._jail
        network = Capability.NETWORK in command.capabilities and jail.sandbox_mode != "off"
        cwd = jail.cwd_of(command.cwd)
        async with contextlib.AsyncExitStack() as stack:
            egress = await self._egress(network, stack)
            # One look at the host for both questions: what the jail shows (for a plain line) and its mounts.
            view = jail.view(jail.workspace) if jail.sandbox_mode != "off" else None
            if egress is None:
                argv, added = jail.line_argv(command.command, cwd, view=view)
            else:
                # The egress forwarder starts the command itself; it is handed a shell, which reports a
                # missing program as bash does.
                argv, added = shell_argv(command.command), {}
            return await jail.run(
                argv,
                cwd=cwd,
                timeout_s=command.timeout_ms / 1000,
                network=network,
                egress=egress,
                extra_env=added,
                view=view,
                standby=self._standby if egress is None else None,
            )

    async def run_worktree(self, command: WorktreeCommand) -> ShellOutcome:
        """Run a git worktree operation's exact argv; raises ``SandboxUnavailable`` when no sandbox can start."""
        recovered = await self._begin_command()
        try:
            outcome = await run_worktree_command(command, self._jail)
        finally:
            repairs = recovered + await self._guarded(self._control.after_command)
        return with_repairs(outcome, repairs)

    # -- background -------------------------------------------------------------------------------------

    async def start_background(self, command: ShellCommand, *, session_id: str) -> BackgroundStarted:
        """Start a command and return at once; raises ``BackgroundRefused`` at the limit."""
        recovered = await self._begin_command()
        try:
            started = await self._start_background(command, session_id=session_id)
        finally:
            self._control.report(recovered)
            await self._guarded(self._control.after_command)
        if self._control_watch is None:
            self._control_watch = asyncio.create_task(self._watch_background())
        return started

    async def _start_background(self, command: ShellCommand, *, session_id: str) -> BackgroundStarted:
        jail = self._jail
        cwd = jail.cwd_of(command.cwd)
        lifetime_s = command.timeout_ms / 1000 if command.timeout_ms > 0 else None
        if jail.sandbox_mode == "off":
            require_directory(cwd)
            process_id = await self._background.start(
                shell_argv(command.command),
                env=dict(jail.env),
                cwd=cwd,
                session_id=session_id,
                command=command.command,
                lifetime_s=lifetime_s,
            )
            return BackgroundStarted(process_id=process_id, sandbox="none")
        network = Capability.NETWORK in command.capabilities
        # The egress proxy lives as long as the process: the background manager closes this stack at its end.
        stack = contextlib.AsyncExitStack()
        try:
            egress = await self._egress(network, stack)
            argv, env = await jail.command_argv(
                shell_argv(command.command), cwd=cwd, network=network, egress=egress
            )
        except BaseException:
            await stack.aclose()
            raise
        process_id = await self._background.start(
            argv,
            env=env,
            session_id=session_id,
            command=command.command,
            lifetime_s=lifetime_s,
            cleanup=stack,
        )
        return BackgroundStarted(process_id=process_id, sandbox="bwrap")

    async def background_output(self, process_id: str, *, session_id: str) -> BackgroundOutput:
        """New output of a process ``session_id`` started; raises ``BackgroundRefused`` for any other id."""
        output = self._background.output(process_id, session_id=session_id)
        await self._guarded(self._control.sweep)
        return with_repairs(output, self._control.take_pending())

    async def kill_background(self, process_id: str, *, session_id: str) -> BackgroundOutput:
        """Kill the process group of a process ``session_id`` started; ``BackgroundRefused`` otherwise."""
        output = await self._background.kill(process_id, session_id=session_id)
        await self._guarded(self._control.sweep)
        return with_repairs(output, self._control.take_pending())

    async def aclose(self) -> None:
        """Kill the background processes and the standby jail (the session ends) and undo what the last of
        the background processes wrote."""
        await self._standby.aclose()
        await self._background.aclose()
        if self._control_watch is not None:
            self._control_watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._control_watch
        # The last background process may have written just before it was killed.
        await self._guarded(self._control.sweep)
