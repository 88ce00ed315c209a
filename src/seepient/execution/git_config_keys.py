"""Which git config keys a command may leave behind: the short list that name things and never run them, and a
config file's entries as git itself reads them, so the control guard can tell a planted ``core.fsmonitor`` from a
harmless ``user.name``."""

from __future__ import annotations

import os
import subprocess

from seepient.execution.host_programs import host_program

SAFE_KEYS = frozenset(
    {
        "core.repositoryformatversion",
        "core.filemode",
        "core.bare",
        "core.logallrefupdates",
        "core.ignorecase",
        "core.precomposeunicode",
        "core.symlinks",
        "core.autocrlf",
        "core.eol",
        "core.safecrlf",
        "core.quotepath",
        "core.sparsecheckout",
        "core.sparsecheckoutcone",
        "core.compression",
        "core.splitindex",
        "core.untrackedcache",
        "extensions.objectformat",
        "extensions.worktreeconfig",
        "extensions.refstorage",
        "extensions.partialclone",
        "init.defaultbranch",
        "user.name",
        "user.email",
        "pull.rebase",
        "pull.ff",
        "push.default",
        "push.autosetupremote",
        "fetch.prune",
        "color.ui",
        "merge.conflictstyle",
        "merge.ff",
        "diff.algorithm",
        "diff.renames",
        "rebase.autosquash",
        "rerere.enabled",
        "gc.auto",
        "index.version",
        "maintenance.auto",
    }
)
"""Keys ``git init``, ``clone``, ``worktree``, ``submodule`` and everyday settings write that name things and never
run them. Sections with a name in the middle are checked by ``SAFE_SUBSECTION_KEYS``."""

SAFE_SUBSECTION_KEYS = {
    "remote": frozenset(
        {"url", "pushurl", "fetch", "tagopt", "mirror", "prune", "promisor", "partialclonefilter"}
    ),
    "branch": frozenset({"remote", "merge", "rebase", "pushremote", "description"}),
    "submodule": frozenset({"url", "active", "branch"}),
}
"""``submodule.NAME.update`` is missing on purpose: ``!command`` there runs on ``git submodule update``; so are
``remote.NAME.uploadpack``/``receivepack``, which name the programs git starts."""


def is_safe_key(key: str, value: str, path: str, root: str) -> bool:
    """Whether ``key = value`` in the config at ``path`` only names things (``core.worktree`` inside ``root``)."""
    if key in SAFE_KEYS:
        return True
    if key == "core.worktree":
        base = os.path.dirname(path)
        real = os.path.realpath(os.path.join(base, value))
        return real == root or real.startswith(root + "/")
    section, _, rest = key.partition(".")
    name, _, variable = rest.rpartition(".")
    allowed = SAFE_SUBSECTION_KEYS.get(section)
    if allowed is None or not name or variable not in allowed:
        return False
    # ext:: runs a command as the transport; fd:: talks to descriptors. Neither is a repository address.
    return not (variable in ("url", "pushurl") and value.lower().startswith(("ext::", "fd::")))


_config_cache: dict[bytes, tuple[tuple[str, str], ...]] = {}


def config_entries(content: bytes) -> tuple[tuple[str, str], ...]:
    """Parse a git config with git itself (``--file``, ``--no-includes``: it only reads the bytes given, runs
    nothing and follows no include), from ``/`` with no system or global config. Unparsable content is a
    single unsafe entry."""
    cached = _config_cache.get(content)
    if cached is not None:
        return cached
    git = host_program("git")
    if git is None:
        return (("(git is not installed here to read the config)", ""),)
    try:
        done = subprocess.run(
            [git, "config", "--file", "-", "--no-includes", "--list", "--null"],
            input=content,
            capture_output=True,
            timeout=10,
            check=False,
            cwd="/",
            env={
                "PATH": "/usr/bin:/bin",
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": "/dev/null",
                "HOME": "/nonexistent",
            },
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return ((f"(git could not read the config: {exc})", ""),)
    if done.returncode != 0:
        first = done.stderr.decode("utf-8", "replace").strip().splitlines() or ["git could not parse it"]
        return ((f"(unparsable config: {first[0]})", ""),)
    entries: list[tuple[str, str]] = []
    for item in done.stdout.split(b"\0"):
        if not item:
            continue
        key, _, value = item.decode("utf-8", "replace").partition("\n")
        entries.append((key.lower(), value))
    result = tuple(entries)
    if len(_config_cache) > 256:
        _config_cache.clear()
    _config_cache[content] = result
    return result
