"""The check of the agent's memory (``memory`` actions), the one carve-out from self-protection: it may write
inside ``$SEEPIENT_HOME/memory`` (its user folder and this workspace's project folder) and nowhere else.

The folder is re-derived here from the engine's own Seepient home and workspace, the relative path re-parsed,
and any symbolic link below the Seepient home refused; the edit tools and the shell keep being refused there
by the path guard.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from seepient.config.memory_paths import MemoryPathError, memory_parts, memory_root
from seepient.policy.checks.decider import Decider
from seepient.policy.modes import ModeSubject
from seepient.protocol import PreparedActionDraft, Verdict
from seepient.protocol.actions import MemoryAction

RULE_MEMORY_PATH = "memory:path"
RULE_MEMORY_LINK = "memory:symlink"
RULE_MEMORY_INVALID = "memory:invalid"
_VERBS = {"create": "writes", "str_replace": "edits", "insert": "edits", "delete": "deletes"}


def memory_problem(action: MemoryAction) -> str | None:
    """What is malformed about a memory action, independent of the disk."""
    writes = action.command in ("create", "str_replace", "insert")
    if writes and (action.change is None or action.change.path != action.path or action.change.delete):
        return f"a memory {action.command} must carry one change to {action.path!r}"
    if not writes and action.change is not None:
        return f"a memory {action.command} carries no file change"
    if action.command in ("delete", "rename") and action.pre_image_sha256 is None:
        return f"a memory {action.command} must be bound to the file's content (pre-image hash)"
    if (action.command == "rename") != (action.new_path is not None):
        return "only rename names a new path"
    if action.command != "view" and not action.path:
        return "name a memory file, not the folder itself"
    if action.view_range is not None and action.command != "view":
        return "only view takes a line range"
    if action.scope == "all" and (action.command != "view" or action.path):
        return "only viewing /memories itself spans both memory folders"
    return None


def check_memory(decider: Decider, action: PreparedActionDraft, memory: MemoryAction) -> Verdict:
    shown = "/memories" if memory.scope == "all" else f"/memories/{memory.scope}/{memory.path}".rstrip("/")
    problem = memory_problem(memory)
    if problem is not None:
        return Verdict.deny(RULE_MEMORY_INVALID, problem)
    home = Path(os.path.abspath(decider.guard.seepient_home))
    scopes = ("project", "user") if memory.scope == "all" else (memory.scope,)
    for path, scope in [(p, scope) for p in (memory.path, memory.new_path) for scope in scopes]:
        root = memory_root(home, decider.workspace, scope)
        if path is None:
            continue
        try:
            parts = memory_parts(path)
        except MemoryPathError as exc:
            return Verdict.deny(RULE_MEMORY_PATH, f"{shown}: {exc}")
        link = _link_below(home, root.joinpath(*parts))
        if link is not None:
            return Verdict.deny(
                RULE_MEMORY_LINK, f"{link}: the memory tool never follows links out of its folder"
            )
    what = f"the memory tool ({memory.command} {shown})"
    decided = decider.tool_verdict(action, ("deny", "ask"), what) or decider.tool_allow(action, what)
    if decided is not None:
        return decided
    if memory.command == "view":
        return decider.decide(ModeSubject("read", True, description=f"viewing {shown}"))
    verb = _VERBS.get(memory.command, "renames")
    return decider.decide(
        ModeSubject(
            "file_change",
            True,
            concerns=[
                f"it {verb} the agent's {memory.scope} memory {shown} (kept across sessions and shown to the "
                "model at the start of later ones)"
            ],
            description=action.summary,
        )
    )


def _link_below(home: Path, target: Path) -> str | None:
    """The first symbolic link (or non-directory parent) on the way from ``home`` to ``target``, if any."""
    current = home
    for name in target.relative_to(home).parts:
        current = current / name
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"{current} cannot be checked ({exc.strerror})"
        if stat.S_ISLNK(info.st_mode):
            return f"{current} is a symbolic link"
    return None
