"""The container launcher: the task it hands a worker, the lock-down check on what the engine reports, and,
against the real engine, orphan removal and the single-use warm pool."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
from pathlib import Path

import aiodocker
import pytest

from seepient.crypto import create_dispatch, generate_signing_key
from seepient.protocol import DispatchLimits, FileChange, PreparedActionDraft, ShellCommand, WorkspaceLease
from seepient.scheduler.image import WORKER_UID
from seepient.scheduler.launcher import (
    DISPATCH_LABEL,
    SCHEDULER_LABEL,
    ContainerLauncher,
    LaunchError,
    _Shape,
    check_settings,
    container_settings,
    scheduler_instance,
    worker_task,
    worker_user,
)
from seepient.scheduler.verify import VerifiedDispatch
from tests.scheduler.worker_env import (
    labelled_containers,
    register_scheduler,
    worker_image_fixture,  # noqa: F401 - registers the session fixture
)


def _verified(workspace: Path, payload, *, timeout_ms: int = 20_000) -> VerifiedDispatch:
    now = dt.datetime.now(dt.UTC)
    kind = "shell" if isinstance(payload, ShellCommand) else "file_change"
    action = PreparedActionDraft(
        session_id="s", call_id="c", tool=kind, kind=kind, payload=payload, read_only=False, summary="x"
    )
    dispatch = create_dispatch(
        action,
        lease=WorkspaceLease(
            tenant="default", workspace=str(workspace), expires_at=now + dt.timedelta(minutes=5)
        ),
        limits=DispatchLimits(cpus=0.5, memory_mb=128, pids=32, timeout_ms=timeout_ms, output_bytes=4096),
        signing_key=generate_signing_key(),
        now=now,
    )
    return VerifiedDispatch(dispatch, workspace)


def test_a_shell_task_carries_the_tighter_timeout_and_the_output_cap(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    task = worker_task(
        _verified(tmp_path, ShellCommand(command="ls", cwd=str(tmp_path / "sub"), timeout_ms=90_000))
    )
    assert task == {
        "op": "shell",
        "command": "ls",
        "cwd": str(tmp_path / "sub"),
        "timeout_ms": 20_000,
        "output_bytes": 4096,
    }


def test_a_commit_task_names_the_leased_workspace(tmp_path: Path) -> None:
    change = FileChange(path="a.txt", pre_image_sha256=None, new_content="x")
    task = worker_task(_verified(tmp_path, change))
    assert task["op"] == "commit" and task["workspace"] == str(tmp_path) and task["change"]["path"] == "a.txt"


def test_a_working_directory_that_escapes_through_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").symlink_to("/etc")
    with pytest.raises(LaunchError, match="outside the leased workspace"):
        worker_task(_verified(tmp_path, ShellCommand(command="ls", cwd=str(tmp_path / "out"))))


def test_containers_run_as_the_workspace_owner_and_never_as_root(tmp_path: Path) -> None:
    os.chown(tmp_path, WORKER_UID, WORKER_UID + 1)
    assert worker_user(tmp_path) == f"{WORKER_UID}:{WORKER_UID + 1}"
    os.chown(tmp_path, 0, 0)
    with pytest.raises(LaunchError, match="owned by root"):
        worker_user(tmp_path)


_LOCKED = {
    "Config": {"User": "10001:10001"},
    "HostConfig": {
        "NetworkMode": "none",
        "ReadonlyRootfs": True,
        "CapDrop": ["ALL"],
        "CapAdd": None,
        "SecurityOpt": ["no-new-privileges:true"],
        "Memory": 128 * 1024 * 1024,
        "NanoCpus": 500_000_000,
        "PidsLimit": 32,
    },
}
_SHAPE = _Shape("/w", "10001:10001", 0.5, 128, 32)


def test_the_engine_report_is_accepted_only_when_every_restriction_is_there() -> None:
    check_settings(container_settings(_LOCKED), _SHAPE)
    for section, key, value in [
        ("HostConfig", "NetworkMode", "bridge"),
        ("HostConfig", "ReadonlyRootfs", False),
        ("HostConfig", "CapDrop", []),
        ("HostConfig", "CapAdd", ["NET_ADMIN"]),
        ("HostConfig", "SecurityOpt", []),
        ("HostConfig", "PidsLimit", 0),
        ("HostConfig", "Memory", 0),
        ("Config", "User", "0:0"),
    ]:
        info = json.loads(json.dumps(_LOCKED))
        info[section][key] = value
        with pytest.raises(LaunchError, match="did not apply"):
            check_settings(container_settings(info), _SHAPE)


def test_orphans_of_this_scheduler_are_removed_and_others_left_alone(
    tmp_path: Path, worker_image: str
) -> None:
    async def go() -> tuple[int, list[str]]:
        async with aiodocker.Docker() as docker:
            ours = await docker.containers.create(
                {
                    "Image": worker_image,
                    "Labels": {DISPATCH_LABEL: "dsp_orphan", SCHEDULER_LABEL: scheduler_instance(tmp_path)},
                }
            )
            theirs = await docker.containers.create(
                {
                    "Image": worker_image,
                    "Labels": {DISPATCH_LABEL: "dsp_other", SCHEDULER_LABEL: "someone-else"},
                }
            )
            try:
                launcher = ContainerLauncher(
                    docker, image=worker_image, state_dir=register_scheduler(tmp_path)
                )
                removed = await launcher.sweep()
                remaining = [c.id for c in await docker.containers.list(all=True)]
                return removed, [cid for cid in (ours.id, theirs.id) if cid in remaining]
            finally:
                await theirs.delete(force=True)

    removed, remaining = asyncio.run(go())
    assert removed == 1 and len(remaining) == 1
    assert labelled_containers() == []


def test_the_pool_hands_each_warm_container_to_one_dispatch_only(tmp_path: Path, worker_image: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.chown(workspace, WORKER_UID, WORKER_UID)

    async def go():
        async with aiodocker.Docker() as docker:
            launcher = ContainerLauncher(
                docker, image=worker_image, state_dir=register_scheduler(tmp_path / "state"), pool_size=1
            )
            try:
                runs = []
                for number in range(3):
                    command = ShellCommand(
                        command=f"echo run-{number} > run-{number}; hostname; cat /proc/1/cmdline | tr '\\0' ' '",
                        cwd=str(workspace),
                    )
                    runs.append(await launcher.run(_verified(workspace, command)))
                    for _ in range(200):  # let the pool refill before the next dispatch
                        if launcher._pool.get(next(iter(launcher._pool), None)):
                            break
                        await asyncio.sleep(0.05)
                return runs
            finally:
                await launcher.close()

    runs = asyncio.run(go())
    assert [run.exit_code for run in runs] == [0, 0, 0]
    assert [run.pooled for run in runs] == [False, True, True]
    assert len({run.container_id for run in runs}) == 3, "a container served two dispatches"
    assert all(run.container and run.container.network_mode == "none" for run in runs)
    assert sorted(p.name for p in workspace.iterdir()) == [".seepient", "run-0", "run-1", "run-2"]
    assert (workspace / ".seepient").stat().st_uid == WORKER_UID
    assert labelled_containers() == []


def _run_once(tmp_path: Path, worker_image: str, command: str, **limits):
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    os.chown(workspace, WORKER_UID, WORKER_UID)

    async def go():
        async with aiodocker.Docker() as docker:
            launcher = ContainerLauncher(
                docker, image=worker_image, state_dir=register_scheduler(tmp_path / "state")
            )
            try:
                return await launcher.run(
                    _verified(workspace, ShellCommand(command=command, cwd=str(workspace)), **limits)
                )
            finally:
                await launcher.close()

    return asyncio.run(go())


def test_a_worker_that_overruns_the_scheduler_deadline_is_killed_and_removed(
    tmp_path: Path, worker_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import seepient.scheduler.launcher as launcher_module

    # The worker's own deadline is 20 s; the scheduler's is made 1 s, so the scheduler's kill is what ends it.
    monkeypatch.setattr(launcher_module, "START_GRACE_S", -19.0)
    run = _run_once(tmp_path, worker_image, "sleep 60", timeout_ms=20_000)
    # Not a speed check: the only sign of *which* deadline ended the run is that it ended well before the
    # worker's own 20 s one.
    assert run.timed_out and run.exit_code is None and run.duration_ms < 15_000
    assert labelled_containers() == []


def test_running_out_of_memory_is_reported_by_the_engine(tmp_path: Path, worker_image: str) -> None:
    run = _run_once(tmp_path, worker_image, "python3 -c 'x = bytearray(400 * 1024 * 1024); print(len(x))'")
    assert run.oom_killed
    assert run.exit_code != 0
    assert labelled_containers() == []


def test_security_state_is_protected_but_never_through_a_symlink(tmp_path: Path) -> None:
    from seepient.scheduler.launcher import read_only_paths

    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    protected = read_only_paths(workspace, f"{WORKER_UID}:{WORKER_UID}")
    assert protected == [workspace / ".seepient", workspace / ".git" / "hooks", workspace / ".git" / "config"]
    assert all(path.stat().st_uid == WORKER_UID for path in protected)
    other = tmp_path / "other"
    other.mkdir()
    (other / ".seepient").symlink_to("/etc")
    assert read_only_paths(other, f"{WORKER_UID}:{WORKER_UID}") == []
