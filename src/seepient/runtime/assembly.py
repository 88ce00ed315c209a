"""Assembling a session from its options: one builder per concern, called in the order their inputs and side
effects need; what a root session loads and a sub-agent inherits is asked of its lineage (``lineage.py``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from seepient import telemetry
from seepient.approval import ApprovalBroker, Approver, ScopeFinder
from seepient.audit.log import AuditLog
from seepient.audit.signing import CheckpointSigner
from seepient.config import SeepientPaths, Settings, SettingsError
from seepient.config.settings import normalise_mode
from seepient.context.knowledge import read_index
from seepient.context.manager import ConversationContext
from seepient.context.skills import SkillCatalog
from seepient.context.warnings import ContextWarning
from seepient.execution.background import BackgroundProcesses
from seepient.execution.local import LocalExecutor
from seepient.execution.lsp_config import server_configs
from seepient.execution.mcp_transport import HostMcpConnector
from seepient.models.base import Model
from seepient.models.router import ModelRouter
from seepient.net import AddressPolicy, policy_from_settings
from seepient.policy.classifier import AutoModeClassifier
from seepient.policy.engine import PolicyEngine
from seepient.policy.paths import PathGuard
from seepient.protocol import ActionExecutor, AgentTask, HostReads, Message, TodoUpdated, ToolResult, new_id
from seepient.protocol.actions import canonical_json
from seepient.protocol.frozen import build_deferred_models
from seepient.runtime.edit_diagnostics import EditDiagnostics
from seepient.runtime.events import EventStream
from seepient.runtime.first_action import FirstActionWarmup
from seepient.runtime.hooks import HookRunner
from seepient.runtime.lineage import ChildLineage, Lineage, RootLineage
from seepient.runtime.loop import AgentLoop, TurnBudget
from seepient.runtime.mcp import SessionMcp
from seepient.runtime.options import SessionOptions
from seepient.runtime.pipeline import PipelineDeps, ToolCallPipeline
from seepient.runtime.subagent import ChildOpener, ChildSession, SubagentLauncher
from seepient.shell import analyse_command
from seepient.tools.builtin.agent import AgentTool
from seepient.tools.registry import ToolRegistry, builtin_tools

__all__ = ["SessionFactory", "SessionParts", "assemble", "auto_mode_classifier", "model_id"]

SessionFactory = Callable[[SessionOptions], ChildSession]
"""Opens a session from options (``Session.open``): handed down so a sub-agent is opened without this package
importing the facade."""

_NO_MODEL = (
    "no model chosen: pass --model PROVIDER:MODEL (for example openai:gpt-4.1 with OPENAI_API_KEY set, "
    "ollama:llama3.1, or replay:PATH for a scripted conversation) or set models.default in the settings"
)


def model_id(spec: str) -> str:
    """``openai:gpt-4.1`` → ``gpt-4.1``: what goes into a request's ``model`` field."""
    return spec.split(":", 1)[1] if ":" in spec else spec


@dataclass(frozen=True)
class SessionParts:
    """Everything an open session is made of, as ``assemble`` built it."""

    session_id: str
    workspace: Path
    settings: Settings
    mode: str
    sandbox: str
    model: Model
    router: ModelRouter
    owns_router: bool
    registry: ToolRegistry
    events: EventStream
    audit: AuditLog
    context: ConversationContext
    history: list[Message]
    policy: PolicyEngine
    deps: PipelineDeps
    pipeline: ToolCallPipeline
    loop: AgentLoop
    hooks: HookRunner
    mcp: SessionMcp


@dataclass(frozen=True)
class _Basis:
    """What every builder of one session starts from."""

    options: SessionOptions
    lineage: Lineage
    workspace: Path
    paths: SeepientPaths
    settings: Settings
    mode: str
    sandbox: str
    session_id: str
    events: EventStream
    net_policy: AddressPolicy
    own_files: tuple[Path, ...]
    """Seepient's own files kept outside its home (an audit key and its public key, a witness): as unreadable
    to the model, and as invisible in the jail, as the home itself."""


def assemble(options: SessionOptions, open_session: SessionFactory) -> SessionParts:
    """Build every part of a session; configuration problems raise ``SettingsError`` or ``ModelError`` before
    any turn. ``open_session`` opens the session's sub-agents."""
    lineage: Lineage = options.subagent if options.subagent is not None else RootLineage()
    workspace = _workspace(options.workspace)
    paths = options.paths or SeepientPaths.from_env(dict(options.environ) if options.environ else None)
    workspace_rules = paths.workspace_rules(workspace, options.principal)
    settings = lineage.settings_for(options, workspace, paths, workspace_rules)
    telemetry.configure(settings.telemetry, environ=options.environ)
    mode = normalise_mode(options.mode or settings.permissions.mode or "ask-untrusted")
    models = _build_models(options, settings)
    session_id = options.session_id or new_id("ses")
    b = _Basis(
        options=options,
        lineage=lineage,
        workspace=workspace,
        paths=paths,
        settings=settings,
        mode=mode,
        sandbox=options.sandbox or settings.execution.sandbox,
        session_id=session_id,
        events=EventStream(session_id, keep=options.event_history),
        net_policy=_net_policy(settings),
        own_files=_own_files(settings, paths),
    )
    policy = _build_policy(b)
    audit = _build_audit(b)
    try:
        # Before anything reads the workspace: a root finishes or undoes the commits earlier runs left open.
        warnings = lineage.begin(audit, session_id=session_id, workspace=workspace, settings=settings)
        executor, host_reads = _build_executor(b, policy, audit)
        history: list[Message] = list(options.history)
        approver = lineage.approver(options.approver)
        broker = _build_broker(b, approver, policy, lineage.project_rules(workspace_rules))
        hooks = _build_hooks(b)
        context = _build_context(b, models, policy, host_reads, warnings)
        registry = ToolRegistry()
        subagents = _build_subagents(b, registry, hooks, policy, models.router, open_session)
        _add_tools(b, registry, context.skills, subagents)
        mcp = _build_mcp(b, registry, audit, approver, policy, models.model.name)
        deps = _build_pipeline_deps(
            b, models, registry, policy, broker, executor, host_reads.reads, audit, history, hooks, mcp
        )
        pipeline = ToolCallPipeline(deps)
        loop = _build_loop(b, models, registry, pipeline, history, context, hooks)
        deps.first_action = _first_action_warmup(workspace, audit, executor, host_reads, policy.guard)
        deps.first_action.start()
    except BaseException:
        # A session that did not open holds nothing open.
        audit.close()
        raise
    return SessionParts(
        session_id=session_id,
        workspace=workspace,
        settings=settings,
        mode=mode,
        sandbox=b.sandbox,
        model=models.model,
        router=models.router,
        owns_router=options.router is None,
        registry=registry,
        events=b.events,
        audit=audit,
        context=context,
        history=history,
        policy=policy,
        deps=deps,
        pipeline=pipeline,
        loop=loop,
        hooks=hooks,
        mcp=mcp,
    )


def _workspace(given: Path) -> Path:
    workspace = given.expanduser()
    if not workspace.is_dir():
        raise SettingsError(f"workspace {workspace} is not a directory")
    return workspace.resolve()


# -- models ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Models:
    router: ModelRouter
    model: Model
    helper: Model
    """Summaries and the auto-mode classifier use the efficient tier; with a replay script there is none (a
    script is the whole conversation), so they ask the session's own model."""

    @property
    def helper_name(self) -> str:
        return model_id(self.helper.name)


def _build_models(options: SessionOptions, settings: Settings) -> _Models:
    if not (options.model or settings.models.default or settings.models.routes):
        raise SettingsError(_NO_MODEL + _ignored_model_choice(settings))
    router = options.router or ModelRouter(
        settings.models, model_override=options.model, base_url=options.base_url, environ=options.environ
    )
    model = router.route("text", "standard")
    if options.resumed:
        router.resume_replays(sum(1 for message in options.history if message.role == "assistant"))
    return _Models(router=router, model=model, helper=router.efficient() or model)


def _ignored_model_choice(settings: Settings) -> str:
    """Why the project's own model choice did not count, when it made one."""
    project = settings.project
    if project is None:
        return ""
    keys = [
        c.key for c in project.ignored if c.key in ("models.default", "models.routes", "models.providers")
    ]
    if not keys:
        return ""
    return (
        f" ({project.path} sets {', '.join(keys)}: a project's model choice counts only once you trust the "
        "project, and its providers never do)"
    )


# -- policy ---------------------------------------------------------------------------------------------


def _net_policy(settings: Settings) -> AddressPolicy:
    try:
        return policy_from_settings(settings.net)
    except ValueError as exc:
        raise SettingsError(f"settings: net: {exc}") from None


def _own_files(settings: Settings, paths: SeepientPaths) -> tuple[Path, ...]:
    key, witness = settings.audit.signing_key(paths), settings.audit.witness()
    return (key, *((witness,) if witness is not None else ()), key.with_name(key.name + ".pub"))


def _build_policy(b: _Basis) -> PolicyEngine:
    return PolicyEngine(
        b.workspace,
        seepient_home=b.paths.home,
        mode=b.mode,
        permissions=b.settings.permissions,
        sources=b.lineage.rule_sources(b.settings),
        net_policy=b.net_policy,
        protected=b.own_files,
    )


# -- audit ----------------------------------------------------------------------------------------------


def _build_audit(b: _Basis) -> AuditLog:
    signer, witness = _audit_key_and_witness(b.settings, b.paths, b.workspace)
    return b.lineage.audit_log(
        b.paths.audit_log, principal=b.options.principal, signer=signer, witness_path=witness
    )


def _audit_key_and_witness(
    settings: Settings, paths: SeepientPaths, workspace: Path
) -> tuple[CheckpointSigner, Path | None]:
    """The audit signing key (loaded at the first record) and the witness, refused inside the workspace: the
    model can read and write there, and a key it can read signs nothing it could not forge. Seepient's home
    is the exception (a workspace may contain it, e.g. the home folder): policy refuses every tool there and
    the jail hides it."""
    key = settings.audit.signing_key(paths)
    witness = settings.audit.witness()
    home = Path(os.path.realpath(paths.home))
    for what, path in (("audit.signingKeyPath", key), ("audit.witnessPath", witness)):
        if path is None:
            continue
        resolved = Path(os.path.realpath(path))
        if resolved.is_relative_to(workspace) and not resolved.is_relative_to(home):
            raise SettingsError(f"{what} {path} is inside the workspace {workspace}; keep it outside")
    return CheckpointSigner(key), witness


# The modules whose models a session first uses at its first action (never before): the warm-up builds them
# while the first model request is in flight. The events and messages the model's answer already needs are not
# here, so that the main thread and the warm-up never build one model at once.
_ACTION_MODEL_MODULES = frozenset(
    {
        "seepient.protocol.actions",
        "seepient.protocol.approved",
        "seepient.protocol.approval",
        "seepient.protocol.outcomes",
        "seepient.protocol.paths",
        "seepient.protocol.verdict",
        "seepient.audit.record",
        "seepient.audit.anchor",
    }
)


def _first_action_warmup(
    workspace: Path, audit: AuditLog, executor: ActionExecutor, host_reads: LocalExecutor, guard: PathGuard
) -> FirstActionWarmup:
    tasks: list[Callable[[], object]] = [
        lambda: build_deferred_models(_ACTION_MODEL_MODULES),
        # The analyser's tables and its parser are made at their first use; a command line makes them now.
        lambda: analyse_command("true", workspace=workspace),
        # So are the sensitive-location patterns of the workspace's part of the tree, which every call that
        # names a path there (a shell call's working directory) is checked against.
        lambda: guard.for_read("."),
        # The action's digest: canonical JSON orders keys by UTF-16, whose codec is imported at its first use.
        lambda: canonical_json({"warm-up": "é"}),
        # Emitted only once the action has run, so never built by the loop meanwhile (the models the model's
        # answer needs are left to the loop, see _ACTION_MODEL_MODULES).
        lambda: ToolResult.model_rebuild(raise_errors=False),
    ]
    if audit.signer is not None:
        tasks.append(audit.signer.preload)
    tasks.append(audit.preload)
    if executor is host_reads:  # a worker backend runs commands in its own jail, not this machine's
        tasks.append(host_reads.look_ahead)
    return FirstActionWarmup(tasks)


# -- execution ------------------------------------------------------------------------------------------


def _build_executor(b: _Basis, policy: PolicyEngine, audit: AuditLog) -> tuple[ActionExecutor, LocalExecutor]:
    """The executor the pipeline hands tools, and the local one that reads the host for preparation (the same
    object unless execution happens in a worker)."""
    execution = b.settings.execution
    lsp = b.settings.lsp
    local = LocalExecutor(
        b.workspace,
        sandbox=b.sandbox,  # type: ignore[arg-type]
        seepient_home=b.paths.home,
        max_output_bytes=execution.max_output_bytes,
        environ=b.options.environ,
        net_policy=b.net_policy,
        # A command approved with the network capability reaches the network only through Seepient's
        # proxy, which applies the same address policy and Fetch deny rules as web_fetch.
        network_egress="filtered",
        egress_domain_check=policy.refused_host,
        background=BackgroundProcesses(
            max_running=execution.max_background_processes,
            buffer_bytes=execution.background_buffer_bytes,
        ),
        language_servers=server_configs(lsp),
        lsp_request_timeout_s=lsp.request_timeout_ms / 1000,
        lsp_diagnostics_wait_s=lsp.diagnostics_wait_ms / 1000,
        jail_readable=[Path(p).expanduser() for p in execution.sandbox_readable],
        jail_hidden=[*(Path(p).expanduser() for p in execution.sandbox_hidden), *b.own_files],
        foreign_config_allowed=policy.user_allows_workspace_write,
        knowledge_index=read_index,
    )
    if execution.backend != "docker-worker":
        return local, local
    # Worker mode: shell commands and file commits go to the scheduler; this process only reads.
    from seepient.execution.docker_worker import DockerWorkerExecutor

    worker = DockerWorkerExecutor.from_settings(
        execution, workspace=b.workspace, local=local, session_id=b.session_id, audit=audit
    )
    return worker, local


# -- approval, hooks and context ------------------------------------------------------------------------


def _build_broker(
    b: _Basis, approver: Approver | None, policy: PolicyEngine, project_rules: Path | None
) -> ApprovalBroker:
    broker = ApprovalBroker(
        approver,
        auto_approve=b.options.auto_approve,
        scopes=ScopeFinder(policy.workspace, policy.guard, home=policy.guard.home),
        # "Always for this project" is the user's decision: it goes to the user's rules for this workspace,
        # never into the repository's file.
        project_settings=project_rules,
        on_grant=b.options.on_grant,
    )
    for kind, value in b.options.grants:
        broker.restore_grant(kind, value)
    return broker


def _build_hooks(b: _Basis) -> HookRunner:
    return HookRunner(
        b.settings.hooks,
        workspace=b.workspace,
        session_id=b.session_id,
        environ=b.options.environ,
        functions=b.lineage.function_hooks(b.options),
    )


def _build_context(
    b: _Basis,
    models: _Models,
    policy: PolicyEngine,
    host_reads: LocalExecutor,
    warnings: Sequence[ContextWarning],
) -> ConversationContext:
    context = ConversationContext.open(
        b.workspace,
        settings=b.settings,
        seepient_home=b.paths.home,
        consent_mode=b.mode,
        sandboxed=b.sandbox != "off",
        skills=b.options.skills,
        summary_model=models.helper,
        summary_model_name=models.helper_name,
        guard=policy.guard,
        environ=b.options.environ,
        git_jail=host_reads.read_only_jail,
    )
    if warnings:
        context.assembled = dataclasses.replace(
            context.assembled, warnings=(*context.assembled.warnings, *warnings)
        )
    return context


# -- tools and sub-agents -------------------------------------------------------------------------------


def _build_subagents(
    b: _Basis,
    registry: ToolRegistry,
    hooks: HookRunner,
    policy: PolicyEngine,
    router: ModelRouter,
    open_session: SessionFactory,
) -> SubagentLauncher | None:
    """The launcher of this session's sub-agents; None where no child could start (the depth limit)."""
    if b.lineage.depth >= b.settings.subagents.max_depth:
        return None
    return SubagentLauncher(
        session_id=b.session_id,
        workspace=b.workspace,
        settings=b.settings,
        depth=b.lineage.depth,
        sources=b.lineage.rule_sources(b.settings),
        approval_lock=b.lineage.approval_lock,
        registry=registry,
        hooks=hooks,
        events=b.events,
        mode=lambda: policy.mode,
        open_child=_child_opener(b, router, open_session),
    )


def _child_opener(b: _Basis, router: ModelRouter, open_session: SessionFactory) -> ChildOpener:
    """How this session's sub-agents open: with its model, router, approver, sandbox and limits, in the task's
    workspace and mode, under the lineage the launcher made."""
    options = b.options

    def open_child(task: AgentTask, lineage: ChildLineage, session_id: str) -> ChildSession:
        return open_session(
            options.for_child(
                Path(task.workspace),
                mode=task.mode,
                sandbox=b.sandbox,
                paths=b.paths,
                session_id=session_id,
                router=router,
                subagent=lineage,
            )
        )

    return open_child


def _add_tools(
    b: _Basis, registry: ToolRegistry, skills: SkillCatalog, subagents: SubagentLauncher | None
) -> None:
    """The tools the session offers: the built-ins, given the session's own state; the surface's own; for a
    sub-agent, what its lineage hands it and only what it was given. Without a launcher the ``agent`` tool
    is not offered at all."""
    events = b.events
    for tool in builtin_tools(
        b.settings,
        skills=skills,
        on_todos=lambda items: events.emit(TodoUpdated, items=items),
        subagents=subagents,
    ):
        registry.register(tool)
    for tool in b.options.extra_tools:
        registry.register(tool)
    b.lineage.adopt_tools(registry)
    if subagents is None:
        registry.disable(AgentTool.name)


# -- the pipeline, the loop and MCP ---------------------------------------------------------------------


def _build_pipeline_deps(
    b: _Basis,
    models: _Models,
    registry: ToolRegistry,
    policy: PolicyEngine,
    broker: ApprovalBroker,
    executor: ActionExecutor,
    reads: HostReads,
    audit: AuditLog,
    history: list[Message],
    hooks: HookRunner,
    mcp: SessionMcp,
) -> PipelineDeps:
    router = models.router
    deps = PipelineDeps(
        registry=registry,
        policy=policy,
        broker=broker,
        executor=executor,
        reads=reads,
        audit=audit,
        events=b.events,
        workspace=b.workspace,
        session_id=b.session_id,
        model_name=models.model.name,
        surface=b.options.surface,
        default_timeout_ms=b.settings.execution.default_timeout_ms,
        classifier=auto_mode_classifier(models.helper) if b.mode == "auto" else None,
        transcript=history,
        model_for=lambda purpose: router.route(purpose, "standard"),
        pre_hooks=[hooks.pre_tool_use],
        post_hooks=[hooks.post_tool_use],
        tool_arrival=mcp.await_tool,
    )
    if b.settings.lsp.diagnostics_after_edit:
        deps.post_hooks.append(EditDiagnostics(executor, reads, b.workspace, policy.guard, b.session_id))
    return deps


def auto_mode_classifier(helper: Model) -> AutoModeClassifier:
    """The classifier ``auto`` mode asks before a person, on the session's helper model."""
    return AutoModeClassifier(helper, model_name=model_id(helper.name))


def _build_loop(
    b: _Basis,
    models: _Models,
    registry: ToolRegistry,
    pipeline: ToolCallPipeline,
    history: list[Message],
    context: ConversationContext,
    hooks: HookRunner,
) -> AgentLoop:
    return AgentLoop(
        model=models.model,
        model_name=model_id(models.model.name),
        registry=registry,
        pipeline=pipeline,
        events=b.events,
        history=history,
        system_prompt=context.system_prompt(),
        max_steps=b.options.max_steps or b.settings.runtime.max_steps,
        context=context,
        max_parallel_tools=b.settings.runtime.max_parallel_tools,
        stop_hook=hooks.stop,
        start_hook=hooks.session_start,
        budget=TurnBudget(
            tokens=b.settings.runtime.turn_token_budget,
            wall_time_s=b.settings.runtime.turn_timeout_ms / 1000,
        ),
    )


def _build_mcp(
    b: _Basis,
    registry: ToolRegistry,
    audit: AuditLog,
    approver: Approver | None,
    policy: PolicyEngine,
    model_spec: str,
) -> SessionMcp:
    return SessionMcp(
        settings=b.settings,
        workspace=b.workspace,
        registry=registry,
        connector=HostMcpConnector(
            b.workspace,
            environ=b.options.environ,
            net_policy=b.net_policy,
            domain_check=policy.refused_host,
        ),
        events=b.events,
        audit=audit,
        approver=approver,
        session_id=b.session_id,
        model_name=model_spec,
        surface=b.options.surface,
    )
