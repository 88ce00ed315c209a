"""``seepient policy explain``: the verdict policy would give one action, without running anything.

The action is prepared the way the real tool prepares it (the shell, read_file and web_fetch tools'
own ``prepare``; for edits and writes the same path resolution and pre-image the edit tools use) and
judged by the real engine with the real settings of the workspace: managed, command-line, project and
user rules, in that precedence. The project's rules count as a session would count them: before the user trusts
the project only its deny and ask rules do, and the explanation says what was left out and names the file and
position of the rule that decided.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Required, TypedDict, Unpack

from seepient.config.paths import SeepientPaths
from seepient.config.settings import SettingsError, load_settings, normalise_mode
from seepient.net.address_policy import policy_from_settings
from seepient.net.special_addresses import REGISTRY_DATE, REGISTRY_SOURCE
from seepient.policy.checks.decider import MANAGED_ONLY_PREFIX
from seepient.policy.engine import PolicyEngine
from seepient.protocol import (
    ActionKind,
    Capability,
    Decision,
    EditBlock,
    FetchRequest,
    FileChange,
    GrepOutcome,
    PathAccess,
    PathDenied,
    PreparedActionDraft,
    ShellCommand,
    SimpleCommand,
    Verdict,
    new_id,
)
from seepient.tools.base import ToolContext, ToolInputError

if TYPE_CHECKING:
    from seepient.config.project_effect import ProjectReport

TargetKind = Literal["shell", "read", "edit", "write", "fetch"]
TARGET_KINDS: tuple[TargetKind, ...] = ("shell", "read", "edit", "write", "fetch")


class ExplainInputError(SettingsError):
    """The action cannot even be prepared (a blank command, a directory given as a file): bad usage."""


@dataclass(frozen=True)
class Explanation:
    """A verdict and what it was about. ``action`` is None when preparing the action was already refused
    (the path guard refuses before policy runs, exactly as in a real session)."""

    decision: Decision
    reasons: tuple[str, ...]
    rule: str | None
    commands: tuple[SimpleCommand, ...] = ()
    capabilities: tuple[Capability, ...] = ()
    mode: str = ""
    kind: TargetKind = "shell"
    target: str = ""
    action: PreparedActionDraft | None = None
    parsed: bool = True
    sources: tuple[str, ...] = field(default=())
    rule_origin: str | None = None
    """Which kind of source the deciding rule came from (``project``, ``user``, ``managed``…), if a rule decided."""
    rule_source: str | None = None
    """Where a person finds that rule: ``/ws/.seepient/settings.json: permissions.allow[0]``."""
    project: ProjectReport | None = None
    decided_by: str = ""
    """What decided, and where a person finds it: ``deny rule Shell(git push:*) in /u/settings.json:
    permissions.deny[0] (user settings)``, ``the built-in privileged-command check``, ``the consent mode …``."""

    def to_json(self) -> dict[str, Any]:
        """The documented object: decision, reasons, rule, ``decided_by`` (the rule and the file and position that
        decided, or the built-in check), commands (argv and binary) and capabilities; with ``ruleSource`` when a
        rule decided and ``project`` when the workspace has project settings."""
        out: dict[str, Any] = {
            "decision": self.decision.value,
            "reasons": list(self.reasons),
            "rule": self.rule,
            "decided_by": self.decided_by,
            "commands": [{"argv": list(c.argv), "binary": c.binary} for c in self.commands],
            "capabilities": [c.value for c in self.capabilities],
        }
        if self.rule_source is not None:
            out["ruleSource"] = {"origin": self.rule_origin, "where": self.rule_source}
        project = self.project
        if project is not None and project.changes:
            out["project"] = {
                "path": str(project.path),
                "trusted": project.trusted,
                "ignored": [change.key for change in project.ignored],
            }
        return out


class ExplainOptions(TypedDict, total=False):
    """Where and how ``explain`` judges: the workspace, a mode and the settings files to read."""

    workspace: Required[Path]
    mode: str | None
    paths: SeepientPaths | None
    config_file: Path | None
    managed_file: Path | None
    home: Path | None


def explain(kind: TargetKind, target: str, **options: Unpack[ExplainOptions]) -> Explanation:
    """Prepare ``target`` as a ``kind`` action in ``workspace`` and return policy's verdict.

    Raises ``SettingsError`` (a malformed rule, a bad mode, a workspace that is not a directory) and
    ``ExplainInputError`` (an action the tool itself would reject); nothing is ever executed.
    """
    return asyncio.run(explain_async(kind, target, **options))


async def explain_async(
    kind: TargetKind,
    target: str,
    *,
    workspace: Path,
    mode: str | None = None,
    paths: SeepientPaths | None = None,
    config_file: Path | None = None,
    managed_file: Path | None = None,
    home: Path | None = None,
) -> Explanation:
    """``explain`` for callers already inside an event loop."""
    if kind not in TARGET_KINDS:
        raise ExplainInputError(f"unknown target kind {kind!r}; use one of {', '.join(TARGET_KINDS)}")
    workspace = workspace.expanduser()
    if not workspace.is_dir():
        raise SettingsError(f"workspace {workspace} is not a directory")
    workspace = workspace.resolve()
    paths = paths or SeepientPaths.from_env()
    settings = load_settings(workspace, paths=paths, config_file=config_file, managed_file=managed_file)
    chosen = normalise_mode(mode or settings.permissions.mode or "ask-untrusted")
    try:
        net_policy = policy_from_settings(settings.net)
    except ValueError as exc:
        raise SettingsError(f"settings: net: {exc}") from None
    engine = PolicyEngine(
        workspace,
        seepient_home=paths.home,
        mode=chosen,
        permissions=settings.permissions,
        home=home,
        net_policy=net_policy,
    )
    sources = tuple(source.label for source in settings.permissions.rule_sources.sources)
    mode_from = (
        "--mode"
        if mode
        else "permissions.mode of the settings"
        if settings.permissions.mode
        else "the default"
    )
    common: dict[str, Any] = {
        "mode": engine.mode,
        "kind": kind,
        "target": target,
        "sources": sources,
        "project": settings.project,
    }
    preparation_only = _PreparationOnly(engine.guard)
    ctx = ToolContext(
        workspace=workspace,
        session_id="explain",
        call_id=new_id("call"),
        paths=engine.guard,
        executor=preparation_only,
        reads=preparation_only,
    )
    try:
        draft = await _prepare(kind, target, ctx)
    except PathDenied as denied:
        return Explanation(
            Decision.DENY,
            (f"{denied.path}: {denied.reason}",),
            denied.rule,
            decided_by=_built_in(denied.rule),
            **common,
        )
    except ToolInputError as exc:
        raise ExplainInputError(str(exc)) from None
    verdict = engine.evaluate(draft)
    payload = draft.payload
    commands: tuple[SimpleCommand, ...] = ()
    capabilities: tuple[Capability, ...] = ()
    parsed = True
    if isinstance(payload, ShellCommand):
        commands, capabilities, parsed = payload.commands, payload.capabilities, payload.parsed
    elif isinstance(payload, FileChange):
        capabilities = (Capability.WRITE_WORKSPACE,)
    elif isinstance(payload, FetchRequest):
        capabilities = (Capability.NETWORK,)
    deciding = _deciding_rule(engine, verdict.rule)
    return Explanation(
        verdict.decision,
        verdict.reasons,
        verdict.rule,
        commands=commands,
        capabilities=capabilities,
        action=draft,
        parsed=parsed,
        rule_origin=deciding.origin if deciding is not None else None,
        rule_source=deciding.source if deciding is not None else None,
        decided_by=decided_by(engine, verdict, mode_from=mode_from),
        **common,
    )


def _deciding_rule(engine: PolicyEngine, rule: str | None) -> Any:
    """The permission rule a verdict named (``allow:Shell(npm test)``), highest precedence first, or None."""
    kind, _, text = (rule or "").partition(":")
    if kind not in ("allow", "ask", "deny") or not text:
        return None
    return next((r for r in getattr(engine.rules, kind) if r.text == text), None)


_BUILT_IN = {
    "path_guard": "Seepient's path guard (workspace containment, sensitive paths, its own state)",
    "shell:privileged": (
        "the built-in privileged-command check (shell/privileged.py); only an allow rule in the user, managed "
        "or --config settings that names the command can open it"
    ),
    "fetch:address_policy": (
        f"the fetch address policy (the {REGISTRY_SOURCE} as of {REGISTRY_DATE}); its only openings are "
        "net.allowHosts, net.allowRanges and net.allowPorts in the user, managed or --config settings"
    ),
    "fetch:invalid_url": "the fetch's strict URL parser (net/url.py)",
    "shell": "the built-in shell analysis (the seepient.shell package)",
}


def _built_in(rule: str | None) -> str:
    rule = rule or ""
    for prefix in (rule, rule.split(":", 1)[0]):
        if prefix in _BUILT_IN:
            return _BUILT_IN[prefix]
    return f"the built-in check {rule}" if rule else "the built-in checks"


def decided_by(engine: PolicyEngine, verdict: Verdict, *, mode_from: str) -> str:
    """The rule that decided with its file and position, the consent mode and where it was chosen, or the
    built-in check, in words."""
    rule = verdict.rule or ""
    kind, _, text = rule.partition(":")
    if kind in ("allow", "ask", "deny"):
        candidates = [r for r in getattr(engine.rules, kind) if r.text == text]
        # The engine names the deciding rule's source in its first reason that names one; with the same
        # rule in two files, that one decided.
        found = next(
            (r for reason in verdict.reasons for r in candidates if r.source in reason),
            candidates[0] if candidates else None,
        )
        if found is not None:
            return f"{kind} rule {text} at {found.source} ({found.origin} settings)"
        return f"{kind} rule {text}"
    if kind == "mode":
        return f"the consent mode {text} (from {mode_from}): no rule and no check decided"
    if rule.startswith(MANAGED_ONLY_PREFIX):
        where = engine.rules.managed_path or "the managed settings"
        return (
            f"the consent mode {text} (from {mode_from}), locked by {where} (allowManagedRulesOnly): only a "
            "person may answer"
        )
    return _built_in(rule)


async def _prepare(kind: TargetKind, target: str, ctx: ToolContext) -> PreparedActionDraft:
    # Each tool is imported when needed: web_fetch alone brings an HTML parser along.
    if kind == "shell":
        from seepient.tools.builtin.shell import ShellInput, ShellTool

        return await ShellTool().prepare(ShellInput(command=target), ctx)
    if kind == "read":
        from seepient.tools.builtin.read import ReadFileInput, ReadFileTool

        return await ReadFileTool().prepare(ReadFileInput(path=target), ctx)
    if kind == "fetch":
        from seepient.tools.builtin.web_fetch import WebFetchInput, WebFetchTool

        return await WebFetchTool().prepare(WebFetchInput(url=target), ctx)
    return await _prepare_change(kind, target, ctx)


async def _prepare_change(kind: TargetKind, target: str, ctx: ToolContext) -> PreparedActionDraft:
    """An edit or write of ``target`` as edit_file and write_file prepare one: the path resolved for writing
    (symlinks and ``..`` followed) and made workspace-relative, bound to the file's current bytes. The new
    content is left empty; policy judges where a change lands, not what it says."""
    if not target.strip():
        raise ToolInputError("give the path of a file to explain an edit or write of")
    resolved = ctx.paths.for_write(target)
    if not resolved.relative:
        raise PathDenied(target, "files can only be written inside the workspace", "workspace_containment")
    try:
        current: bytes | None = await ctx.reads.read_file(resolved.absolute)
    except FileNotFoundError:
        current = None
    except IsADirectoryError:
        raise ToolInputError(
            f"{resolved.relative} is a directory; give the path of a file inside it"
        ) from None
    pre_image = hashlib.sha256(current).hexdigest() if current is not None else None
    if kind == "write" or not current:
        # write_file, and edit_file on a missing or empty file, carry the whole new content.
        change = FileChange(path=resolved.relative, pre_image_sha256=pre_image, new_content="")
        tool = "write_file" if kind == "write" else "edit_file"
    else:
        change = FileChange(
            path=resolved.relative,
            pre_image_sha256=pre_image,
            edits=(EditBlock(search="", replace=""),),
        )
        tool = "edit_file"
    verb = "Write" if kind == "write" else "Edit"
    return PreparedActionDraft(
        session_id=ctx.session_id,
        call_id=ctx.call_id,
        tool=tool,
        kind=ActionKind.FILE_CHANGE,
        payload=change,
        read_only=False,
        summary=f"{verb} {resolved.relative}",
    )


class _PreparationOnly:
    """The host reads and executor explain hands the tools: it reads what preparation needs (a file's bytes,
    whether a directory exists) through the path guard, and refuses everything else."""

    def __init__(self, guard: PathAccess) -> None:
        self._guard = guard

    async def read_file(self, path: str) -> bytes:
        resolved = self._guard.for_read(path)
        return await asyncio.to_thread(Path(resolved.absolute).read_bytes)

    async def glob(self, root: str, pattern: str, **_: Any) -> list[str]:
        raise _refused("list files")

    async def grep(self, root: str, pattern: str, **_: Any) -> GrepOutcome:
        raise _refused("search files")

    async def read_memory(self, scope: str, path: str) -> bytes:
        raise _refused("read the memory folder")

    async def list_memory(self, scope: str, path: str) -> list[str]:
        raise _refused("list the memory folder")

    async def lsp_query(self, query: Any) -> Any:
        raise _refused("ask a language server")

    async def lsp_diagnostics(self, paths: tuple[str, ...]) -> None:
        raise _refused("ask a language server")

    async def execute(self, action: Any) -> Any:
        raise _refused(f"carry out {action.summary!r}")

    async def aclose(self) -> None:
        return None


def _refused(what: str) -> RuntimeError:
    return RuntimeError(f"policy explain never runs anything; a tool tried to {what} while preparing")
