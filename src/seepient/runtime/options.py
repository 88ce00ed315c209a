"""``SessionOptions``: what a surface says when it opens a session."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from seepient.approval import Approver
from seepient.config import SeepientPaths
from seepient.models.router import ModelRouter
from seepient.protocol import Message
from seepient.runtime.hooks import FunctionHook
from seepient.tools.base import Tool

if TYPE_CHECKING:
    from seepient.models.base import Model
    from seepient.runtime.lineage import ChildLineage

__all__ = ["SessionOptions"]

_CHILD_INHERITS = tuple("model base_url auto_approve approver surface max_steps environ principal".split())
"""What a sub-agent's options take from its parent's as the surface gave them. The rest is the parent's own:
its tools, skills, history, grants, hooks and settings reach a child through its lineage, if at all."""


@dataclass
class SessionOptions:
    """What a surface knows when it opens a session; anything left ``None`` comes from the settings."""

    workspace: Path
    model: str | Model | None = None
    """A spec (``provider:model``, ``replay:PATH``) or a ``Model`` made in Python (a test's ``ScriptedModel``)."""
    mode: str | None = None
    base_url: str | None = None
    sandbox: Literal["auto", "off"] | None = None
    """``None``: the user's settings decide (a project's settings can never turn the sandbox off)."""
    auto_approve: bool = False
    approver: Approver | None = None
    surface: str = "sdk"
    config_file: Path | None = None
    settings_overrides: dict[str, Any] | None = None
    """Settings the surface itself supplies, applied like command-line flags (over user, project and
    ``config_file``): an editor's own MCP servers over ACP, which are the user's configuration, not the
    project's."""
    max_steps: int | None = None
    paths: SeepientPaths | None = None
    environ: Mapping[str, str] | None = None
    extra_tools: list[Tool] = field(default_factory=list)  # type: ignore[type-arg]
    skills: list[str] = field(default_factory=list)
    principal: str | None = None
    """Who drives the session on a multi-user surface; written into every audit record."""
    session_id: str | None = None
    """Keep an id the surface already gave the session (the server's stored sessions); new when ``None``."""
    history: list[Message] = field(default_factory=list)
    """Messages of earlier turns to continue from (a session the server restored from its store)."""
    grants: Sequence[tuple[str, str]] = ()
    """Standing session grants to re-establish, as ``on_grant`` reported them (``ApprovalBroker``)."""
    on_grant: Callable[[str, str], None] | None = None
    """Told of each grant the user gives for the rest of the session, so the surface can store it."""
    event_history: int | None = None
    """How many recent events the session keeps for ``events_since`` (all when ``None``); a surface that
    stores every event itself (the server) keeps none, so a long session does not pile events up in memory."""
    resumed: bool = False
    """``history`` is a stored conversation being continued (a restarted server, a resumed TUI session): a
    replay script then plays on after the steps the history shows instead of from its first turn."""
    router: ModelRouter | None = None
    """A router shared by several sessions (a server keeps one, so breakers see every session's failures);
    the session builds and closes its own when ``None``."""
    subagent: ChildLineage | None = None
    """Set when the session is a sub-agent: what it takes from its parent (``runtime/lineage.py``); a root
    session when ``None``."""
    hooks: list[FunctionHook] = field(default_factory=list)
    """Python callables run as hooks after the settings' command hooks (the SDK's ``Agent(hooks=...)``; a
    parent session hands its own to a child)."""
    project_trust: bool | None = None
    """Whether the workspace's project settings are trusted: ``None`` lets the user's trust store decide (by
    the hash of the settings file as loaded); the server passes its own decision (``trustedRoots``). Nothing
    else, ``auto_approve`` included, trusts a project."""

    def for_child(self, workspace: Path, **own: Any) -> SessionOptions:
        """Options for one of this session's sub-agents in ``workspace``: what ``_CHILD_INHERITS`` names, and
        ``own`` (its mode, id and lineage, and what the parent settled: sandbox, paths, router)."""
        return SessionOptions(workspace, **{name: getattr(self, name) for name in _CHILD_INHERITS}, **own)
