"""Run one hook command on the host: its JSON input on stdin, a scrubbed environment, a deadline that kills
its whole process group, and capped output. What the answer means is ``runtime/hooks.py``'s business.

Hooks are configuration the user wrote (never the project or the model: see ``config.sections.HookSettings``),
so they run unsandboxed like a git hook would, but never with Seepient's secrets in their environment.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from seepient.execution.environment import scrubbed_environment
from seepient.execution.host_programs import host_path
from seepient.execution.process import ProcessResult, run_process
from seepient.protocol.errors import RefusalError

_MAX_OUTPUT_BYTES = 256 * 1024


class HookProgramRefused(RefusalError):
    """The hook would run a file the model can change (a script inside the workspace); the message says which."""


def hook_environment(
    environ: Mapping[str, str] | None = None, *, workspace: Path | None = None
) -> dict[str, str]:
    """The user's harmless variables with their real ``HOME``; no ``*_API_KEY``, ``*_TOKEN``, ``*SECRET*``; with
    a ``workspace``, a ``PATH`` without its folders (``host_path``)."""
    env = os.environ if environ is None else environ
    scrubbed = scrubbed_environment(env, home=env.get("HOME") or str(Path.home()))
    if workspace is not None:
        scrubbed["PATH"] = host_path(scrubbed["PATH"], workspace)
    return scrubbed


def hook_argv(command: str | Sequence[str]) -> list[str]:
    """A shell line runs through ``/bin/sh -c``; a list is the argv itself."""
    if isinstance(command, str):
        return ["/bin/sh", "-c", command]
    return list(command)


def check_hook_program(
    command: str | Sequence[str], *, workspace: Path, env: Mapping[str, str], protected: Sequence[Path] = ()
) -> None:
    """Refuse a hook whose program or script is a file inside the workspace (outside ``protected`` folders such
    as ``.seepient/``): the model may edit workspace files, and a hook runs unsandboxed, so running one would
    run the model's code on the host. Only words written literally are looked at; a hook that reads workspace
    files indirectly (``make``, ``npm run``) is the user's own risk, documented in ``runtime/hooks.py``."""
    words = shlex.split(command, posix=True) if isinstance(command, str) else list(command)
    root = workspace.resolve()
    guarded = [p.resolve() for p in protected]
    for index, word in enumerate(words):
        if not word or word.startswith("-") or any(c in word for c in "$`*?[|;&<>()"):
            continue
        candidates = [Path(word).expanduser()]
        if not candidates[0].is_absolute():
            candidates = [root / candidates[0]]
            if index == 0 or "/" not in word:
                found = shutil.which(word, path=env.get("PATH"))
                if found:
                    candidates.append(Path(found))
        for candidate in candidates:
            if not candidate.is_file() and not candidate.is_symlink():
                continue
            for where in (Path(os.path.normpath(candidate)), candidate.resolve()):
                inside = where == root or root in where.parents
                if inside and not any(g == where or g in where.parents for g in guarded):
                    raise HookProgramRefused(
                        f"the hook runs {word!r}, a file inside the workspace ({where}) that the model can "
                        "change; move it outside the workspace or into .seepient/"
                    )


async def run_hook_process(
    command: str | Sequence[str],
    *,
    stdin: bytes,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
) -> ProcessResult:
    """Run the hook to completion or its deadline; on a deadline or a cancelled caller the group is killed."""
    return await run_process(
        hook_argv(command),
        env=env,
        cwd=cwd,
        timeout_s=timeout_s,
        max_output_bytes=_MAX_OUTPUT_BYTES,
        stdin=stdin,
    )
