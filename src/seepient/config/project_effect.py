"""What a project's settings change, key by key, before and after the user trusts the project.

Each key of the project schema is one of: *tightening* (deny and ask rules, keeping the sandbox on: applies
before trust), a *team setting* (allow rules, routes, MCP servers the project names…: applies once the user
trusts the project), a *limit* (a number where lower is stricter: before trust it applies only when stricter
than the user's own value; after trust, up to a stated ceiling), the *mode* (before trust only a stricter
one), or *never* (a project never decides where credentials go, what runs on the host or where execution
happens: providers, base URLs and key variables, hooks, web search, network allowlists, execution backends,
scheduler endpoints and key paths, the sandbox off). ``docs/security.md`` has the same table in prose.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from seepient.config.project import ProjectFile, ProjectSettings
from seepient.config.settings import Settings, normalise_mode

Outcome = Literal["applies", "capped", "ignored"]
MODE_STRICTNESS = ("always-ask", "ask-untrusted", "auto", "autonomous-trusted")
"""Consent modes from the strictest to the loosest."""
_SHOWN_MAX = 120
TRUST_NOTE = (
    "Trusting applies the settings listed as needing trust, exactly as the file is now: any change to it asks "
    "again. Nothing a project sets ever chooses where your keys go, what runs on this machine outside the "
    "sandbox, or where execution happens."
)


@dataclass(frozen=True)
class ProjectChange:
    """One key of the project file and what it does: ``key`` as a person writes it (``permissions.allow``,
    ``mcpServers.docs``), its value ``shown`` short, the outcome before and after trust and why."""

    key: str
    shown: str
    before_trust: Outcome
    after_trust: Outcome
    why: str
    path: tuple[str, ...]
    value_before: Any = None
    value_after: Any = None

    def outcome(self, trusted: bool) -> Outcome:
        return self.after_trust if trusted else self.before_trust

    def value(self, trusted: bool) -> Any:
        return self.value_after if trusted else self.value_before

    @property
    def needs_trust(self) -> bool:
        return self.before_trust == "ignored" and self.after_trust != "ignored"

    @property
    def never(self) -> bool:
        return self.after_trust == "ignored"


@dataclass(frozen=True)
class _Key:
    """How one key is judged: ``kind`` names the class, ``why`` is the reason a person reads."""

    kind: Literal["tightens", "team", "never", "limit", "mode", "sandbox", "mcp", "lsp"]
    why: str = ""
    ceiling: float | None = None


def _tightens(why: str) -> _Key:
    return _Key("tightens", why)


def _team(why: str) -> _Key:
    return _Key("team", why)


def _never(why: str) -> _Key:
    return _Key("never", why)


def _limit(ceiling: float) -> _Key:
    return _Key("limit", ceiling=ceiling)


_CREDENTIALS = (
    "a project never decides where credentials or prompts go; providers come from your own settings"
)
_EXECUTION = (
    "a project never decides where or how execution happens, nor which keys and certificates it trusts"
)
KEYS: dict[str, _Key] = {
    "permissions.deny": _tightens("deny rules only refuse"),
    "permissions.ask": _tightens("ask rules only add questions"),
    "permissions.allow": _team("allow rules let actions run without asking"),
    "permissions.mode": _Key("mode"),
    "models.default": _team("chooses among the providers your settings know"),
    "models.routes": _team("chooses among the providers your settings know"),
    "models.retry": _team("how often a failing request is retried"),
    "models.circuitBreaker": _team("when a failing model is set aside"),
    "models.prices": _team("the prices costs are counted with"),
    "models.maxOutputTokens": _team("how long one model answer may be"),
    "models.providers": _never(_CREDENTIALS + " (base URLs, key variables)"),
    "execution.sandbox": _Key("sandbox"),
    "execution.defaultTimeoutMs": _limit(600_000),
    "execution.maxOutputBytes": _limit(10_000_000),
    "execution.maxBackgroundProcesses": _limit(8),
    "execution.backgroundBufferBytes": _limit(4 * 1024 * 1024),
    "execution.workerLimits.cpus": _limit(4),
    "execution.workerLimits.memoryMb": _limit(4096),
    "execution.workerLimits.pids": _limit(512),
    "execution.backend": _never(_EXECUTION),
    "execution.sandboxReadable": _never("a project never chooses what of your home its commands may read"),
    "execution.sandboxHidden": _never("what the jail hides is your own choice, in your own settings"),
    "execution.schedulerEndpoint": _never(_EXECUTION),
    "execution.schedulerEndpoints": _never(_EXECUTION),
    "execution.schedulerBreaker": _never(_EXECUTION),
    "execution.workerImage": _never(_EXECUTION),
    "execution.mtls": _never(_EXECUTION),
    "execution.dispatchSigningKeyPath": _never(_EXECUTION),
    "execution.resultVerifyKeyPath": _never(_EXECUTION),
    "execution.tenant": _never(_EXECUTION),
    "runtime.maxSteps": _limit(200),
    "runtime.maxParallelTools": _limit(16),
    "runtime.turnTokenBudget": _limit(20_000_000),
    "runtime.turnTimeoutMs": _limit(4 * 3_600_000),
    "runtime.warmStart": _never("which process runs your commands on this machine is your own choice"),
    "context.windowTokens": _limit(1_000_000),
    "context.ruleFileMaxChars": _limit(128_000),
    "context.rulesMaxChars": _limit(256_000),
    "context.memoryMaxChars": _limit(48_000),
    "context.compactAt": _team("when history is compacted"),
    "context.keepRecentTurns": _team("how many turns compaction keeps"),
    "context.skillMatchThreshold": _team("how readily skills are matched"),
    "lsp.servers": _Key("lsp"),
    "lsp.diagnosticsAfterEdit": _team("whether edits wait for diagnostics"),
    "lsp.diagnosticsWaitMs": _limit(10_000),
    "lsp.requestTimeoutMs": _limit(120_000),
    "subagents.maxDepth": _limit(3),
    "subagents.maxConcurrent": _limit(8),
    "mcpServers": _Key("mcp"),
    "instructions": _team("text added to the system prompt as if from your settings"),
    "hooks": _never("hooks run commands on this machine, outside the sandbox"),
    "net": _never("network allowlists would open private and metadata addresses"),
    "webSearch": _never(_CREDENTIALS + " (the search backend and its key variable)"),
    "enabledProjectMcpServers": _never("a project cannot approve its own MCP servers"),
    "knowledge": _never("loading an embedding model can run code from its folder"),
    "audit": _never(
        "the audit log's signing key and witness are yours to place; a project could move the key "
        "where commands can read it"
    ),
    "telemetry": _never(
        "traces leave this machine: a project must not choose the collector they go to, nor put prompts and "
        "commands on them"
    ),
}


def judge(project: ProjectSettings, baseline: Settings) -> tuple[ProjectChange, ...]:
    """Every key ``project`` sets, judged against ``baseline`` (the user's own settings, for limits and mode)."""
    changes: list[ProjectChange] = []
    _walk(project, (), (), baseline, changes)
    return tuple(changes)


def applied_settings(changes: tuple[ProjectChange, ...], *, trusted: bool) -> dict[str, Any]:
    """The part of the project's settings that applies, as a settings object in canonical (camelCase) keys."""
    out: dict[str, Any] = {}
    for change in changes:
        if change.outcome(trusted) == "ignored":
            continue
        target = out
        for part in change.path[:-1]:
            target = target.setdefault(part, {})
        target[change.path[-1]] = change.value(trusted)
    return out


def _walk(
    model: BaseModel,
    names: tuple[str, ...],
    keys: tuple[str, ...],
    baseline: Settings,
    changes: list[ProjectChange],
) -> None:
    for name, field in type(model).model_fields.items():
        if name not in model.model_fields_set:
            continue
        value = getattr(model, name)
        here_names, here_keys = (*names, name), (*keys, field.alias or name)
        key = ".".join(here_keys)
        rule = KEYS.get(key)
        if rule is None and isinstance(value, BaseModel):
            _walk(value, here_names, here_keys, baseline, changes)
            continue
        if rule is None:
            # A key the schema has but the table forgot: refused, as anything unknown would be.
            rule = _never("not classified for projects")
        changes.extend(_judge_key(rule, key, here_keys, here_names, value, baseline))


def _judge_key(
    rule: _Key,
    key: str,
    path: tuple[str, ...],
    names: tuple[str, ...],
    value: Any,
    baseline: Settings,
) -> list[ProjectChange]:
    shown = _show(value)
    dumped = _dump(value)
    if rule.kind == "tightens":
        return [ProjectChange(key, shown, "applies", "applies", rule.why, path, dumped, dumped)]
    if rule.kind == "team":
        return [ProjectChange(key, shown, "ignored", "applies", rule.why, path, None, dumped)]
    if rule.kind == "never":
        return [ProjectChange(key, shown, "ignored", "ignored", rule.why, path)]
    if rule.kind == "sandbox":
        if value == "off":
            return [
                ProjectChange(key, shown, "ignored", "ignored", "a project never turns the sandbox off", path)
            ]
        return [ProjectChange(key, shown, "applies", "applies", "keeps the sandbox on", path, value, value)]
    if rule.kind == "mode":
        return [_judge_mode(key, path, value, baseline)]
    if rule.kind == "limit":
        assert rule.ceiling is not None
        return [_judge_limit(key, path, names, value, rule.ceiling, baseline)]
    if rule.kind == "mcp":
        return [_judge_mcp_server(key, path, name, server) for name, server in value.items()]
    return [_judge_lsp_server(key, path, name, server) for name, server in value.items()]


def _judge_mode(key: str, path: tuple[str, ...], mode: str, baseline: Settings) -> ProjectChange:
    yours = normalise_mode(baseline.permissions.mode or "ask-untrusted")
    if MODE_STRICTNESS.index(mode) <= MODE_STRICTNESS.index(yours):
        why = "the same as yours" if mode == yours else f"stricter than your {yours}"
        return ProjectChange(key, mode, "applies", "applies", why, path, mode, mode)
    return ProjectChange(key, mode, "ignored", "applies", f"looser than your {yours}", path, None, mode)


def _judge_limit(
    key: str,
    path: tuple[str, ...],
    names: tuple[str, ...],
    value: float,
    ceiling: float,
    baseline: Settings,
) -> ProjectChange:
    yours: Any = baseline
    for name in names:
        yours = getattr(yours, name)
    if value <= yours:
        why = "the same as yours" if value == yours else f"stricter than your {_number(yours)}"
        return ProjectChange(key, _number(value), "applies", "applies", why, path, value, value)
    allowed = min(value, max(yours, ceiling))
    if allowed < value:
        why = (
            f"looser than your {_number(yours)}; once trusted it applies only up to "
            f"{_number(allowed)}, the most a project may set"
        )
        return ProjectChange(key, _number(value), "ignored", "capped", why, path, None, allowed)
    why = f"looser than your {_number(yours)} (a project may set up to {_number(ceiling)} once trusted)"
    return ProjectChange(key, _number(value), "ignored", "applies", why, path, None, value)


def _judge_mcp_server(key: str, path: tuple[str, ...], name: str, server: BaseModel) -> ProjectChange:
    command = getattr(server, "command", None)
    what = (
        " ".join([command, *getattr(server, "args", [])]) if command is not None else str(server.url)  # type: ignore[attr-defined]
    )
    why = (
        "an MCP server runs its command on this machine: even once trusted it starts only after you approve it "
        "(or list it in enabledProjectMcpServers in your own settings)"
        if command is not None
        else "an MCP server reached over the network: even once trusted it starts only after you approve it"
    )
    return ProjectChange(
        f"{key}.{name}", _cut(what), "ignored", "applies", why, (*path, name), None, _dump(server)
    )


def _judge_lsp_server(key: str, path: tuple[str, ...], name: str, server: BaseModel | None) -> ProjectChange:
    here = (*path, name)
    if server is None:
        return ProjectChange(
            f"{key}.{name}", "null", "applies", "applies", "switches a language server off", here
        )
    shown = _show(server)
    if not getattr(server, "sandbox", True):
        why = "a project never runs a language server outside the sandbox"
        return ProjectChange(f"{key}.{name}", shown, "ignored", "ignored", why, here)
    why = "a language server the project names; it runs in the sandbox with the workspace read-only"
    return ProjectChange(f"{key}.{name}", shown, "ignored", "applies", why, here, None, _dump(server))


def _dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_unset=True, mode="json")
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_dump(v) for v in value]
    return value


def _show(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return _cut(", ".join(value) or "(none)")
    if isinstance(value, str):
        return _cut(value)
    return _cut(json.dumps(_dump(value), ensure_ascii=False, separators=(",", ":")))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN_MAX else text[: _SHOWN_MAX - 1] + "…"


@dataclass(frozen=True)
class ProjectReport:
    """What a session made of the project's settings: the file as read, each change, and whether it was trusted
    (``decided_by`` says by what: ``trust store``, ``server trustedRoots``, ``caller``)."""

    file: ProjectFile
    changes: tuple[ProjectChange, ...]
    trusted: bool
    decided_by: str

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def needs_trust(self) -> bool:
        """Whether trusting the project would change anything (only then is the user asked)."""
        return any(change.needs_trust for change in self.changes)

    @property
    def ignored(self) -> tuple[ProjectChange, ...]:
        return tuple(c for c in self.changes if c.outcome(self.trusted) == "ignored")

    @property
    def mcp_servers(self) -> frozenset[str]:
        """MCP servers the project's settings define or redefine in this session (each still needs consent)."""
        return frozenset(
            c.path[1]
            for c in self.changes
            if c.path[0] == "mcpServers" and c.outcome(self.trusted) != "ignored"
        )

    def warnings(self, workspace: Path) -> list[str]:
        """What a person should be told about this session, one line each (empty when nothing was dropped)."""
        lines = []
        waiting = [c.key for c in self.ignored if c.needs_trust]
        if waiting:
            lines.append(
                f"this project is not trusted, so these settings were ignored: {', '.join(waiting)}; "
                f"review them and trust the project with `seepient trust {workspace}`"
            )
        never = [c.key for c in self.ignored if c.never]
        if never:
            lines.append(
                f"a project's settings never set {', '.join(never)}, trusted or not, so they were ignored; "
                "put what you want of them in ~/.seepient/settings.json or a --config file"
            )
        capped = [c for c in self.changes if c.outcome(self.trusted) == "capped"]
        lines.extend(
            f"{c.key}: {c.shown} is more than a project may set; {_number(c.value(True))} applies"
            for c in capped
        )
        return lines

    def summary(self) -> list[str]:
        """A readable account of every key, grouped by what trusting the project would change."""
        if not self.file.exists:
            return [f"{self.path}: no project settings file (trusting records that it has none)"]
        if not self.changes:
            return [f"{self.path}: sets nothing"]
        lines = [f"{self.path} (sha256 {self.file.sha256[:16]}…):"]
        groups = (
            (
                "applies now (it only makes Seepient stricter):",
                [c for c in self.changes if not c.needs_trust and not c.never],
            ),
            ("applies only once you trust this project:", [c for c in self.changes if c.needs_trust]),
            ("never applies from a project, trusted or not:", [c for c in self.changes if c.never]),
        )
        for title, members in groups:
            if not members:
                continue
            lines.append(f"  {title}")
            lines.extend(f"    {c.key}: {c.shown}  ({c.why})" for c in members)
        return lines
