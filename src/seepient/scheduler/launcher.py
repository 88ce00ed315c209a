"""Running one verified dispatch in a fresh, locked-down container through the Docker API (aiodocker), with
the evidence the engine reports, guaranteed teardown, orphan removal and an optional warm pool.

A container gets no network, a read-only root, a private ``/tmp``, no capabilities, ``no-new-privileges``,
the workspace owner's non-root uid, pids/memory/cpu limits, the leased workspace (mounted read-write at the
same path as on the host, so paths in commands mean the same thing; its ``.seepient`` and git hooks and
config read-only) and, read-only, a directory holding the task. The engine's own report of those settings is checked before the container starts and returned
as evidence. A pooled container is created and started ahead of a dispatch with the same workspace and
limits; its worker blocks on a FIFO until the task is written, and the container is used once.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import json
import os
import secrets
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiodocker
from aiodocker.containers import DockerContainer

from seepient.execution.sandbox.bwrap import protected_workspace_paths
from seepient.protocol import ContainerSettings, FileChange, ShellCommand
from seepient.protocol.errors import ExecutionError
from seepient.scheduler.verify import VerifiedDispatch

DISPATCH_LABEL = "seepient.dispatch_id"
SCHEDULER_LABEL = "seepient.scheduler"
POOLED = "pooled"
TASK_MOUNT = "/run/seepient"
TASK_NAME = "task"
WORKER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
START_GRACE_S = 10.0
"""Added to an action's timeout for the container's own start and stop before the scheduler kills it."""
FIFO_WAIT_S = 3.0
POOL_IDLE_S = 120.0
MAX_POOL_SHAPES = 8
"""Warm containers are kept for at most this many (workspace, limits) shapes' worth of ``pool_size``."""


class LaunchError(ExecutionError):
    """The container could not be run as required; the dispatch result carries this message as ``error``."""


@dataclass(frozen=True)
class WorkerRun:
    """What came out of one container: the worker's report, and what the engine and the clock say."""

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    output_truncated: bool = False
    duration_ms: int = 0
    timed_out: bool = False
    oom_killed: bool = False
    container: ContainerSettings | None = None
    container_id: str | None = None
    pooled: bool = False


@dataclass(frozen=True)
class _Shape:
    """What a container is fixed to at creation: one workspace, one user, one set of limits."""

    workspace: str
    user: str
    cpus: float
    memory_mb: int
    pids: int


@dataclass
class _Pooled:
    container: DockerContainer
    task_dir: Path
    settings: ContainerSettings
    created: float = field(default_factory=time.monotonic)


def scheduler_instance(state_dir: Path) -> str:
    """A label value naming this scheduler (by its state directory), so it sweeps only its own containers."""
    return hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:16]


def worker_user(workspace: Path) -> str:
    """The uid:gid the container runs as: the workspace's owner, so its files stay the tenant's, never root."""
    info = os.stat(workspace)
    if info.st_uid == 0:
        raise LaunchError(
            f"the leased workspace {workspace} is owned by root, and worker containers never run as root; "
            "give the workspace to the tenant's unprivileged account (for example chown -R 10001:10001 DIR)"
        )
    return f"{info.st_uid}:{info.st_gid}"


def read_only_paths(workspace: Path, user: str) -> list[Path]:
    """The workspace's own security state (``.seepient``, git hooks and config), mounted read-only over the
    workspace as the local sandbox does, so a command cannot rewrite permission rules or plant a git hook.

    Missing ones are created (an empty read-only directory is the only way to stop a command from creating
    one) and given to the workspace's owner; a symlink is never mounted, since a mount follows it.
    """
    before = {path for path in _candidates(workspace) if os.path.lexists(path)}
    protected = protected_workspace_paths(workspace)
    uid, gid = (int(part) for part in user.split(":"))
    chosen = []
    for path in protected:
        if path.is_symlink() or not os.path.lexists(path) or not path.resolve().is_relative_to(workspace):
            continue
        if path not in before:
            with contextlib.suppress(OSError):
                os.chown(path, uid, gid, follow_symlinks=False)
        chosen.append(path)
    return chosen


def _candidates(workspace: Path) -> list[Path]:
    return [workspace / ".seepient", workspace / ".git" / "hooks", workspace / ".git" / "config"]


def worker_task(verified: VerifiedDispatch) -> dict[str, Any]:
    """The task the worker entrypoint reads: plain JSON, so a shell task needs no library in the container."""
    dispatch, workspace = verified.dispatch, verified.workspace
    payload = dispatch.action.payload
    if isinstance(payload, ShellCommand):
        return {
            "op": "shell",
            "command": payload.command,
            "cwd": str(shell_cwd(payload, workspace)),
            "timeout_ms": min(payload.timeout_ms, dispatch.limits.timeout_ms),
            "output_bytes": dispatch.limits.output_bytes,
        }
    if isinstance(payload, FileChange):
        return {"op": "commit", "workspace": str(workspace), "change": payload.model_dump(mode="json")}
    raise LaunchError(f"a worker runs shell commands and file changes, not {dispatch.action.kind} actions")


def shell_cwd(command: ShellCommand, workspace: Path) -> Path:
    """The command's working directory, which must be the leased workspace or inside it."""
    cwd = Path(command.cwd) if os.path.isabs(command.cwd) else workspace / command.cwd
    resolved = Path(os.path.realpath(cwd))
    if resolved != workspace and not resolved.is_relative_to(workspace):
        raise LaunchError(f"the command's working directory {command.cwd} is outside the leased workspace")
    return resolved


class ContainerLauncher:
    """Runs dispatches in containers of ``image``; ``pool_size`` warm containers are kept per shape in use."""

    def __init__(
        self,
        docker: aiodocker.Docker,
        *,
        image: str,
        state_dir: Path,
        pool_size: int = 0,
        on_error: Callable[[str], None] = lambda _message: None,
    ) -> None:
        self._docker = docker
        self.image = image
        self.instance = scheduler_instance(state_dir)
        self._tasks_root = state_dir / "tasks"
        self.pool_size = pool_size
        self._pool: dict[_Shape, list[_Pooled]] = {}
        self._warming: dict[_Shape, int] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._known: set[str] = set()
        self._on_error = on_error
        self._closing = False

    async def run(self, verified: VerifiedDispatch) -> WorkerRun:
        """Run the dispatch to completion or its deadline; the container is removed whatever happens."""
        dispatch = verified.dispatch
        task = json.dumps(worker_task(verified)).encode()
        limits = dispatch.limits
        shape = _Shape(
            str(verified.workspace),
            worker_user(verified.workspace),
            limits.cpus,
            limits.memory_mb,
            limits.pids,
        )
        deadline_s = limits.timeout_ms / 1000 + START_GRACE_S
        started = time.monotonic()
        pooled = await self._take_pooled(shape, task)
        if pooled is not None:
            container, task_dir, settings = pooled.container, pooled.task_dir, pooled.settings
        else:
            container, task_dir, settings = await self._create(shape, dispatch.dispatch_id, task=task)
        self._refill(shape)
        try:
            if pooled is None:
                await container.start()
            return await self._collect(container, settings, started, deadline_s, pooled is not None)
        finally:
            self._remove_later(container, task_dir)

    async def _collect(
        self,
        container: DockerContainer,
        settings: ContainerSettings,
        started: float,
        deadline_s: float,
        pooled: bool,
    ) -> WorkerRun:
        killed = False
        try:
            await asyncio.wait_for(container.wait(timeout=None), deadline_s)
        except TimeoutError:
            killed = True
            with contextlib.suppress(aiodocker.DockerError):
                await container.kill()
            with contextlib.suppress(aiodocker.DockerError, TimeoutError):
                await asyncio.wait_for(container.wait(timeout=None), 10)
        duration_ms = int((time.monotonic() - started) * 1000)
        info = await container.show()
        state = info.get("State", {})
        oom_killed = bool(state.get("OOMKilled"))
        report = await self._report(container)
        if report is None:
            return WorkerRun(
                exit_code=None,
                stderr="" if killed else f"the worker ended (exit {state.get('ExitCode')}) without a result",
                duration_ms=duration_ms,
                timed_out=killed,
                oom_killed=oom_killed,
                container=settings,
                container_id=container.id,
                pooled=pooled,
            )
        return WorkerRun(
            exit_code=report.get("exit_code"),
            stdout=str(report.get("stdout", "")),
            stderr=str(report.get("stderr", "")),
            output_truncated=bool(report.get("output_truncated")),
            duration_ms=duration_ms,
            timed_out=killed or bool(report.get("timed_out")),
            oom_killed=oom_killed,
            container=settings,
            container_id=container.id,
            pooled=pooled,
        )

    async def _report(self, container: DockerContainer) -> dict[str, Any] | None:
        try:
            lines = await container.log(stdout=True)
        except aiodocker.DockerError:
            return None
        text = "".join(lines).strip()
        if not text:
            return None
        try:
            report = json.loads(text.rsplit("\n", 1)[-1])
        except ValueError:
            return None
        return report if isinstance(report, dict) else None

    async def _create(
        self, shape: _Shape, dispatch_label: str, *, task: bytes | None
    ) -> tuple[DockerContainer, Path, ContainerSettings]:
        name = f"seepient-{secrets.token_hex(12)}"
        task_dir = self._tasks_root / name
        await asyncio.to_thread(_prepare_task_dir, task_dir, task)
        protected = await asyncio.to_thread(read_only_paths, Path(shape.workspace), shape.user)
        config = self._container_config(shape, dispatch_label, task_dir, protected)
        try:
            container = await self._docker.containers.create(config, name=name)
        except aiodocker.DockerError as exc:
            shutil.rmtree(task_dir, ignore_errors=True)
            raise LaunchError(f"the engine refused to create the container: {exc.message}") from None
        self._known.add(container.id)
        try:
            settings = container_settings(await container.show())
            check_settings(settings, shape)
        except BaseException:
            self._remove_later(container, task_dir)
            raise
        return container, task_dir, settings

    def _container_config(
        self, shape: _Shape, dispatch_label: str, task_dir: Path, protected: list[Path]
    ) -> dict[str, Any]:
        memory = shape.memory_mb * 1024 * 1024
        return {
            "Image": self.image,
            "User": shape.user,
            "Env": [f"PATH={WORKER_PATH}", "HOME=/tmp", "LANG=C.UTF-8"],
            "Cmd": [f"{TASK_MOUNT}/{TASK_NAME}"],
            "WorkingDir": shape.workspace,
            "Hostname": "worker",
            "NetworkDisabled": True,
            "AttachStdin": False,
            "OpenStdin": False,
            "Tty": False,
            "Labels": {DISPATCH_LABEL: dispatch_label, SCHEDULER_LABEL: self.instance},
            "HostConfig": {
                "NetworkMode": "none",
                "ReadonlyRootfs": True,
                "Tmpfs": {"/tmp": f"rw,nosuid,nodev,size={max(16, shape.memory_mb // 2)}m"},
                "CapDrop": ["ALL"],
                "SecurityOpt": ["no-new-privileges:true"],
                "Privileged": False,
                "PidsLimit": shape.pids,
                "Memory": memory,
                "MemorySwap": memory,
                "NanoCpus": int(shape.cpus * 1_000_000_000),
                "IpcMode": "private",
                "AutoRemove": False,
                "Mounts": [
                    {"Type": "bind", "Source": shape.workspace, "Target": shape.workspace, "ReadOnly": False},
                    {"Type": "bind", "Source": str(task_dir), "Target": TASK_MOUNT, "ReadOnly": True},
                    *(
                        {"Type": "bind", "Source": str(path), "Target": str(path), "ReadOnly": True}
                        for path in protected
                    ),
                ],
            },
        }

    async def _take_pooled(self, shape: _Shape, task: bytes) -> _Pooled | None:
        waiting = self._pool.get(shape)
        while waiting:
            pooled = waiting.pop()
            try:
                await asyncio.to_thread(_write_fifo, pooled.task_dir / TASK_NAME, task, FIFO_WAIT_S)
                return pooled
            except OSError as exc:
                self._on_error(f"pooled container {pooled.container.id[:12]} did not take its task: {exc}")
                self._remove_later(pooled.container, pooled.task_dir)
        return None

    def _refill(self, shape: _Shape) -> None:
        if self.pool_size <= 0 or self._closing:
            return
        # Warm containers exist per shape in use; the total is bounded so that many tenants cannot make the
        # scheduler hold an unbounded number of idle containers.
        total = sum(len(waiting) for waiting in self._pool.values()) + sum(self._warming.values())
        room = self.pool_size * MAX_POOL_SHAPES - total
        missing = self.pool_size - len(self._pool.setdefault(shape, [])) - self._warming.get(shape, 0)
        for _ in range(max(0, min(missing, room))):
            self._warming[shape] = self._warming.get(shape, 0) + 1
            self._spawn(self._warm(shape))

    async def _warm(self, shape: _Shape) -> None:
        try:
            container, task_dir, settings = await self._create(shape, POOLED, task=None)
            try:
                await container.start()
            except BaseException:
                self._remove_later(container, task_dir)
                raise
        finally:
            self._warming[shape] -= 1
        if self._closing:
            self._remove_later(container, task_dir)
            return
        self._pool.setdefault(shape, []).append(_Pooled(container, task_dir, settings))

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._on_error(f"background container work failed: {task.exception()}")

    def _remove_later(self, container: DockerContainer, task_dir: Path) -> None:
        # Removal runs after the result is answered: the caller waits for the action, not for the engine
        # to unmount a file system. close() and the orphan sweep make sure it happens.
        self._spawn(self._remove(container, task_dir))

    async def _remove(self, container: DockerContainer, task_dir: Path) -> None:
        try:
            await container.delete(force=True)
        except aiodocker.DockerError as exc:
            if exc.status != 404:
                raise
        finally:
            self._known.discard(container.id)
            await asyncio.to_thread(shutil.rmtree, task_dir, True)

    async def sweep(self, *, idle_s: float = POOL_IDLE_S) -> int:
        """Remove this scheduler's containers that no dispatch or pool holds (left by a crash), and pooled
        containers idle longer than ``idle_s``. Returns how many were removed."""
        now = time.monotonic()
        for shape, waiting in list(self._pool.items()):
            for pooled in [p for p in waiting if now - p.created > idle_s]:
                waiting.remove(pooled)
                self._remove_later(pooled.container, pooled.task_dir)
            if not waiting:
                del self._pool[shape]
        labelled = await self._docker.containers.list(
            all=True, filters=json.dumps({"label": [f"{SCHEDULER_LABEL}={self.instance}"]})
        )
        removed = 0
        for container in labelled:
            if container.id in self._known:
                continue
            with contextlib.suppress(aiodocker.DockerError):
                await container.delete(force=True)
                removed += 1
        if not self._known and self._tasks_root.is_dir():
            for leftover in self._tasks_root.iterdir():
                shutil.rmtree(leftover, ignore_errors=True)
        return removed

    async def close(self) -> None:
        """Remove every pooled container and wait for all pending removals."""
        self._closing = True
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        for waiting in self._pool.values():
            for pooled in waiting:
                self._remove_later(pooled.container, pooled.task_dir)
        self._pool.clear()
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)


def container_settings(info: dict[str, Any]) -> ContainerSettings:
    """What the engine reports it applied (``docker inspect``), as evidence."""
    host = info.get("HostConfig", {})
    security = host.get("SecurityOpt") or []
    return ContainerSettings(
        network_mode=str(host.get("NetworkMode", "")),
        read_only_root=bool(host.get("ReadonlyRootfs")),
        cap_drop=tuple(host.get("CapDrop") or ()),
        cap_add=tuple(host.get("CapAdd") or ()),
        user=str(info.get("Config", {}).get("User", "")),
        no_new_privileges=any(
            option.startswith("no-new-privileges") and not option.endswith(":false") for option in security
        ),
        memory_bytes=host.get("Memory") or None,
        nano_cpus=host.get("NanoCpus") or None,
        pids_limit=host.get("PidsLimit") or None,
    )


def check_settings(settings: ContainerSettings, shape: _Shape) -> None:
    """Refuse to start a container the engine did not lock down as asked (a misconfigured engine or
    plugin that drops options must not turn into an open container)."""
    problems = []
    if settings.network_mode != "none":
        problems.append(f"network mode {settings.network_mode!r}")
    if not settings.read_only_root:
        problems.append("a writable root file system")
    if "ALL" not in settings.cap_drop or settings.cap_add:
        problems.append(f"capabilities drop={settings.cap_drop} add={settings.cap_add}")
    if not settings.no_new_privileges:
        problems.append("no no-new-privileges")
    if settings.user != shape.user or settings.user.split(":")[0] in ("", "0", "root"):
        problems.append(f"user {settings.user!r}")
    if settings.memory_bytes != shape.memory_mb * 1024 * 1024 or settings.pids_limit != shape.pids:
        problems.append(f"memory {settings.memory_bytes} / pids {settings.pids_limit}")
    if problems:
        raise LaunchError("the engine did not apply the worker's restrictions: " + ", ".join(problems))


def _prepare_task_dir(task_dir: Path, task: bytes | None) -> None:
    task_dir.mkdir(mode=0o755, parents=True)
    os.chmod(task_dir, 0o755)
    path = task_dir / TASK_NAME
    if task is None:
        os.mkfifo(path, 0o644)
        os.chmod(path, 0o644)
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(task)
    os.chmod(path, 0o644)


def _write_fifo(path: Path, data: bytes, wait_s: float) -> None:
    """Hand the task to a pooled worker blocked on reading ``path``; ENXIO until it has opened the FIFO."""
    if not stat.S_ISFIFO(os.lstat(path).st_mode):
        raise OSError(errno.EINVAL, "not a FIFO", str(path))
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.002)
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
