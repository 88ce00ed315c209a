"""Diagnostics of one workspace on this machine (``seepient doctor`` and the TUI's ``/doctor``): the jail, Docker
and the worker image, providers and their keys, settings files, trust, MCP servers, the audit log, and worker
mode as root. Each finding says what to do about it; nothing here prints a key or starts a project's server
without the consent a session would need."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from seepient.audit.verify import verify_log
from seepient.config import SeepientPaths, Settings, SettingsError, load_settings
from seepient.config.settings import has_project_settings, inspect_project, managed_settings_path
from seepient.execution.host_probes import ProbeResult, probe_bubblewrap, probe_docker, probe_jail
from seepient.models.base import ModelError
from seepient.models.resolve import is_script_spec, known_providers
from seepient.models.router import ModelRouter

if TYPE_CHECKING:
    from seepient.runtime.session import Session

Status = Literal["ok", "info", "warning", "problem"]
DEFAULT_WORKER_IMAGE = "seepient/worker:latest"
_MARKS = {"ok": "✓", "info": "·", "warning": "!", "problem": "✗"}
_PLACEHOLDER_MODEL = "ollama:doctor"
"""Starting MCP servers to check them calls no model; a provider that needs no key lets the session open."""


@dataclass(frozen=True)
class Finding:
    """One line of the report: ``area`` groups it, ``fix`` says what to do when it is not ``ok``."""

    area: str
    status: Status
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class DoctorReport:
    workspace: str
    findings: tuple[Finding, ...]

    @property
    def problems(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status == "problem")

    @property
    def ok(self) -> bool:
        """No finding is a problem (warnings and notes do not count)."""
        return not self.problems

    def lines(self) -> list[str]:
        """The report for a person: one line per finding, its fix indented below."""
        lines = [f"Seepient doctor for {self.workspace}"]
        for finding in self.findings:
            lines.append(f"{_MARKS[finding.status]} {finding.area:<9} {finding.detail}")
            if finding.fix:
                lines.append(f"  {'':<9} fix: {finding.fix}")
        count = len(self.problems)
        lines.append("no problems found" if not count else f"{count} problem(s) found")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace,
            "ok": self.ok,
            "problems": len(self.problems),
            "findings": [asdict(f) for f in self.findings],
        }


@dataclass
class DoctorOptions:
    workspace: Path
    paths: SeepientPaths | None = None
    environ: Mapping[str, str] | None = None
    config_file: Path | None = None
    leased_roots: Sequence[Path] = ()
    """Workspace roots a scheduler leases (its tenants' ``workspaceRoot``), checked for worker mode as root."""
    mcp: bool = True
    session: Session | None = None
    """A live session (the TUI's): its settings and MCP servers are reported instead of opening another."""
    euid: int = field(default_factory=os.geteuid)


class _Collector:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, area: str, status: Status, detail: str, fix: str = "") -> None:
        self.findings.append(Finding(area, status, detail, fix if status != "ok" else ""))

    def probe(self, area: str, result: ProbeResult, *, needed: bool = True) -> None:
        failed: Status = "problem" if needed else "info"
        self.add(area, "ok" if result.ok else failed, result.detail, result.fix)


async def diagnose(options: DoctorOptions) -> DoctorReport:
    """Run every check for ``options.workspace``; never raises for what it finds."""
    env = os.environ if options.environ is None else options.environ
    paths = options.paths or SeepientPaths.from_env(dict(env))
    found = _Collector()
    workspace = options.workspace.expanduser()
    if not workspace.is_dir():
        found.add("workspace", "problem", f"{workspace} is not a directory", "pass --workspace DIR")
        return DoctorReport(str(workspace), tuple(found.findings))
    workspace = workspace.resolve()
    settings = _settings(options, workspace, paths, found)
    sandbox_needed = settings.execution.sandbox != "off"
    # The blocking checks run in threads: the TUI's /doctor must not freeze the screen.
    bwrap = await asyncio.to_thread(probe_bubblewrap)
    found.probe("sandbox", bwrap, needed=sandbox_needed)
    if bwrap.ok:
        found.probe("sandbox", await probe_jail(workspace, seepient_home=paths.home), needed=sandbox_needed)
    if not sandbox_needed:
        found.add(
            "sandbox", "warning", "the sandbox is off: shell commands run unsandboxed", "remove sandbox off"
        )
    worker_mode = settings.execution.backend == "docker-worker"
    image = settings.execution.worker_image or DEFAULT_WORKER_IMAGE
    for result in await probe_docker(image):
        found.probe("docker", result, needed=worker_mode)
    _providers(settings, env, found)
    _trust(workspace, paths, found)
    if options.mcp:
        await _mcp(options, workspace, paths, settings, found)
    await asyncio.to_thread(_audit, settings, paths, found)
    if options.euid == 0 and (worker_mode or options.leased_roots):
        _leased_owners([workspace, *options.leased_roots], found)
    return DoctorReport(str(workspace), tuple(found.findings))


def _settings(options: DoctorOptions, workspace: Path, paths: SeepientPaths, found: _Collector) -> Settings:
    env = dict(os.environ if options.environ is None else options.environ)
    files = [
        ("user", paths.user_settings),
        ("your rules for this workspace", paths.workspace_rules(workspace)),
        ("managed", managed_settings_path(env)),
    ]
    if has_project_settings(workspace, paths):
        files.insert(2, ("project", SeepientPaths.project_settings(workspace)))
    if options.config_file is not None:
        files.append(("--config", options.config_file))
    for kind, path in files:
        if os.path.lexists(path):
            found.add("settings", "ok", f"{kind} settings: {path}")
        elif kind == "--config":
            found.add("settings", "problem", f"--config {path} does not exist", "give an existing JSON file")
    if options.session is not None:
        return options.session.settings
    try:
        settings = load_settings(workspace, paths=paths, config_file=options.config_file)
    except SettingsError as exc:
        found.add(
            "settings", "problem", str(exc), "correct the file it names (sessions refuse to open until then)"
        )
        return Settings()
    found.add("settings", "ok", "the settings load without errors")
    return settings


def _providers(settings: Settings, env: Mapping[str, str], found: _Collector) -> None:
    try:
        routes = ModelRouter(settings.models, environ=env).routes()
    except ModelError as exc:
        found.add("models", "problem", str(exc), "correct models.routes in the settings")
        return
    used: dict[str, list[str]] = {}
    for route in routes:
        for target in route.targets:
            if not is_script_spec(target.spec):
                used.setdefault(target.spec.partition(":")[0], []).append(f"{route.key} → {target.spec}")
    if not routes:
        found.add(
            "models",
            "warning",
            "no default model is configured",
            'set models.default (e.g. "openai:gpt-4.1") in ~/.seepient/settings.json, or pass --model',
        )
    configured = set(settings.models.providers)
    for provider in known_providers(settings.models):
        if provider.name not in used and provider.name not in configured:
            continue
        where = "; ".join(used.get(provider.name, [])) or "not used by a route"
        if not provider.key_envs:
            found.add("models", "ok", f"provider {provider.name} ({provider.type}): needs no key · {where}")
            continue
        # Only whether a variable is set: the key itself never leaves the environment.
        present = [variable for variable in provider.key_envs if env.get(variable)]
        if present:
            found.add("models", "ok", f"provider {provider.name}: key in ${present[0]} · {where}")
        else:
            status: Status = "problem" if provider.name in used else "warning"
            found.add(
                "models",
                status,
                f"provider {provider.name}: no key (${' or $'.join(provider.key_envs)} is not set) · {where}",
                f"export {provider.key_envs[0]}=… before starting Seepient",
            )


def _trust(workspace: Path, paths: SeepientPaths, found: _Collector) -> None:
    if not has_project_settings(workspace, paths):
        found.add("trust", "ok", "the workspace has no project settings (nothing to trust)")
        return
    try:
        report = inspect_project(workspace, paths=paths)
    except SettingsError as exc:
        found.add("trust", "problem", str(exc), "correct the project settings file")
        return
    if report.trusted:
        found.add("trust", "ok", f"{workspace} is trusted with its settings as they are now")
    elif not report.needs_trust:
        found.add("trust", "ok", "the project settings only make Seepient stricter: no trust needed")
    else:
        found.add(
            "trust",
            "warning",
            f"{workspace} is not trusted: its settings only make Seepient stricter, the rest is ignored",
            f"review and trust it with `seepient trust {workspace}`",
        )
        servers = sorted({c.path[1] for c in report.changes if c.path[0] == "mcpServers" and len(c.path) > 1})
        if servers:
            found.add(
                "mcp",
                "info",
                f"the project's MCP server(s) {', '.join(servers)} are not configured (not started, not checked) "
                "while the project is untrusted",
                "trust the project first; even then each starts only with your consent",
            )


async def _mcp(
    options: DoctorOptions, workspace: Path, paths: SeepientPaths, settings: Settings, found: _Collector
) -> None:
    if not settings.mcp_servers:
        return
    session = options.session
    opened = None
    if session is None:
        from seepient.runtime.session import Session, SessionOptions

        try:
            opened = session = Session.open(
                SessionOptions(
                    workspace=workspace,
                    model=_PLACEHOLDER_MODEL,
                    surface="cli",
                    config_file=options.config_file,
                    paths=paths,
                    environ=options.environ,
                )
            )
        except (SettingsError, ModelError) as exc:
            found.add("mcp", "problem", f"MCP servers not checked: {exc}", "correct the settings first")
            return
    try:
        # No approver: a project's server that would need someone's consent is not started, only named.
        await session.start_mcp()
        for line in mcp_summary(session):
            found.add("mcp", *line)
    finally:
        if opened is not None:
            await opened.aclose()


def mcp_summary(session: Session) -> list[tuple[Status, str, str]]:
    """Each configured server with its tools, or why it is not running; the session's servers are started."""
    mcp = session.mcp
    problems = {report.server: report for report in mcp.reports if report.code != "mcp_tool_skipped"}
    lines: list[tuple[Status, str, str]] = []
    for name in mcp.configured:
        report = problems.get(name)
        if report is not None and report.code == "mcp_server_not_started":
            fix = f'add "{name}" to enabledProjectMcpServers in your user settings to start it'
            lines.append(("info", report.message, fix))
        elif report is not None:
            lines.append(("problem", report.message, f"check the command of mcpServers.{name}"))
        else:
            tools = mcp.servers.tool_names(name)
            lines.append(("ok", f"MCP server {name}: {len(tools)} tool(s): {', '.join(tools) or '-'}", ""))
    return lines


def _audit(settings: Settings, paths: SeepientPaths, found: _Collector) -> None:
    log = paths.audit_log
    if not log.exists():
        found.add("audit", "ok", f"no audit log yet ({log}); the first action creates it")
        return
    key = settings.audit.signing_key(paths)
    public = key.with_name(key.name + ".pub")
    report = verify_log(log, public_key=public if public.exists() else None, witness=settings.audit.witness())
    if not report.ok:
        found.add(
            "audit",
            "problem",
            f"the audit log {log} does not verify: {report.problem}",
            "run `seepient audit verify` for details; keep the file as evidence",
        )
        return
    found.add(
        "audit", "ok", f"the audit log verifies: {report.records} records, signature {report.signature}"
    )
    open_actions = [a for a in report.interrupted if a.state == "open"]
    if open_actions:
        found.add(
            "audit",
            "warning",
            f"{len(open_actions)} interrupted action(s) have no outcome yet",
            "`seepient audit verify` names them; the next session closes them",
        )


def _leased_owners(roots: Sequence[Path], found: _Collector) -> None:
    """Worker containers run as the workspace's owner, never root: a root-owned lease is refused at dispatch."""
    for root in dict.fromkeys(roots):
        try:
            owner = root.stat().st_uid
        except OSError as exc:
            found.add("worker", "problem", f"leased workspace {root}: {exc.strerror}", "create it")
            continue
        if owner == 0:
            found.add(
                "worker",
                "problem",
                f"leased workspace {root} belongs to root; worker containers never run as root",
                f"give it to the tenant's unprivileged account, e.g. `chown -R 10001:10001 {root}`",
            )
        else:
            found.add("worker", "ok", f"leased workspace {root} belongs to uid {owner} (unprivileged)")
