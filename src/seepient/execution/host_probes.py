"""What ``seepient doctor`` asks of the host: whether the jail really runs a command here, and whether Docker
answers and holds the worker image. Each probe runs a fixed command line, never anything a workspace wrote."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from seepient.execution.host_programs import host_program
from seepient.execution.jail import run_sandboxed
from seepient.execution.sandbox.bwrap import BwrapSandbox
from seepient.protocol import SandboxUnavailable

_DOCKER_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class ProbeResult:
    """``ok`` with what was found in ``detail``; otherwise ``detail`` says what failed and ``fix`` what to do."""

    ok: bool
    detail: str
    fix: str = ""


def probe_bubblewrap() -> ProbeResult:
    status = BwrapSandbox().probe()
    if status.available:
        return ProbeResult(True, f"bubblewrap starts ({status.bwrap})")
    return ProbeResult(False, f"bubblewrap cannot start: {status.reason}", status.fix)


async def probe_jail(workspace: Path, *, seepient_home: Path) -> ProbeResult:
    """Run ``true`` in the very jail the shell tool uses for ``workspace`` (host view, private /tmp, guards)."""
    true = host_program("true") or "/bin/true"
    try:
        outcome = await run_sandboxed([true], workspace=workspace, cwd=workspace, seepient_home=seepient_home)
    except SandboxUnavailable as exc:
        return ProbeResult(False, f"the jail cannot start here: {exc}", "see the bubblewrap line above")
    if outcome.exit_code == 0:
        return ProbeResult(True, f"a command runs in the jail for {workspace}")
    why = (outcome.stderr or "").strip()[:300] or f"exit code {outcome.exit_code}"
    return ProbeResult(
        False,
        f"a command in the jail for {workspace} failed: {why}",
        "run `seepient sandbox run -- true` to see the whole error",
    )


async def _docker(docker: str, *args: str) -> tuple[int | None, str]:
    # The user's own Docker client, started from / so nothing of the workspace is in reach of its lookups.
    try:
        process = await asyncio.create_subprocess_exec(
            docker,
            *args,
            cwd="/",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
    except OSError as exc:
        return None, str(exc)
    try:
        output, _ = await asyncio.wait_for(process.communicate(), _DOCKER_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        return None, f"no answer in {_DOCKER_TIMEOUT_S:.0f} s"
    return process.returncode, output.decode("utf-8", "replace").strip()


async def probe_docker(image: str) -> tuple[ProbeResult, ProbeResult]:
    """Whether the Docker engine answers, then whether it holds ``image`` (the worker image)."""
    docker = host_program("docker")
    missing_image = ProbeResult(False, f"worker image {image}: not checked (no Docker)", "")
    if docker is None:
        return (
            ProbeResult(
                False,
                "docker is not installed",
                "install Docker to use worker mode (execution.backend docker-worker)",
            ),
            missing_image,
        )
    code, output = await _docker(docker, "version", "--format", "{{.Server.Version}}")
    if code != 0:
        first = output.splitlines()[-1] if output else "no output"
        return (
            ProbeResult(
                False,
                f"the Docker engine does not answer: {first[:300]}",
                "start the Docker daemon, or give this user access to its socket",
            ),
            missing_image,
        )
    engine = ProbeResult(
        True, f"Docker engine {output.splitlines()[0] if output else '?'} answers ({docker})"
    )
    code, output = await _docker(docker, "image", "inspect", "--format", "{{.Id}}", image)
    if code != 0:
        return engine, ProbeResult(
            False, f"worker image {image} is not built", "build it with `seepient worker build-image`"
        )
    return engine, ProbeResult(True, f"worker image {image} is present ({output[:19]})")
