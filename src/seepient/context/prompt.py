"""Builds the system prompt for a session: who the agent is, where it works, and the project's AGENTS.md rules."""

from __future__ import annotations

import platform
from datetime import date
from pathlib import Path

_AGENTS_FILE = "AGENTS.md"
_MAX_RULES_CHARS = 20_000

_BASE = """You are Seepient, a coding agent working in the user's project.
You act only through the tools you are given. Every file change and shell command you request is checked
against policy, may need the user's approval, runs in a sandbox without network access, and is recorded in
an audit log. If an action is denied or rejected, read the reason and propose something else; do not try to
get around a refusal. Keep answers short and say what you changed."""


def environment_facts(workspace: Path, *, sandboxed: bool) -> str:
    return "\n".join(
        [
            f"- Workspace root: {workspace}",
            f"- Platform: {platform.system()} {platform.machine()}",
            f"- Date: {date.today().isoformat()}",
            f"- Shell commands run {'in a sandbox with no network' if sandboxed else 'WITHOUT a sandbox'}",
        ]
    )


def project_rules(workspace: Path) -> str | None:
    path = workspace / _AGENTS_FILE
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if len(text) > _MAX_RULES_CHARS:
        text = text[:_MAX_RULES_CHARS] + "\n[AGENTS.md cut at 20,000 characters]"
    return text


def system_prompt(workspace: Path, *, sandboxed: bool = True) -> str:
    parts = [_BASE, "Environment:\n" + environment_facts(workspace, sandboxed=sandboxed)]
    rules = project_rules(workspace)
    if rules:
        parts.append(f"Project rules from {_AGENTS_FILE}:\n{rules}")
    return "\n\n".join(parts)
