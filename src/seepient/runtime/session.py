"""The ``Session`` facade: the one object surfaces talk to. It wires settings, model, tools, policy, approval,
execution and audit for a workspace, and runs turns one at a time."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from seepient.approval import ApprovalBroker, Approver, ScopeFinder
from seepient.audit.log import AuditLog
from seepient.audit.signing import CheckpointSigner
from seepient.config import SeepientPaths, Settings, SettingsError, load_settings
from seepient.config.settings import normalise_mode
from seepient.context.manager import ConversationContext
from seepient.context.warnings import ContextWarning
from seepient.execution.background import BackgroundProcesses
from seepient.execution.local import LocalExecutor
from seepient.execution.lsp_config import server_configs
from seepient.execution.mcp_transport import HostMcpConnector
from seepient.models.base import Model
from seepient.models.router import ModelRouter, Purpose
from seepient.net import policy_from_settings
from seepient.policy.classifier import AutoModeClassifier
from seepient.policy.engine import PolicyEngine
from seepient.protocol import (
    ActionExecutor,
    CompactionEvent,
    ImagePart,
    Message,
    RuntimeEvent,
    TodoItem,
    TodoUpdated,
    ToolCall,
    new_id,
)
from seepient.runtime.edit_diagnostics import EditDiagnostics
from seepient.runtime.events import EventListener, EventStream
from seepient.runtime.hooks import FunctionHook, HookRunner
from seepient.runtime.interrupted import close_interrupted
from seepient.runtime.loop import PLAN_APPROVED_PROMPT, AgentLoop, TurnOutcome
from seepient.runtime.mcp import SessionMcp
from seepient.runtime.pipeline import CallResult, PipelineDeps, ToolCallPipeline
from seepient.runtime.subagent import SubagentSpec, bind_subagents
from seepient.tools.base import Tool
from seepient.tools.builtin.skill import SkillTool
from seepient.tools.builtin.todo import TodoWriteTool
from seepient.tools.registry import ToolRegistry, builtin_registry

__all__ = ["Session", "SessionOptions", "TurnOutcome"]


def _model_id(spec: str) -> str:
    """``openai:gpt-4.1`` → ``gpt-4.1``: what goes into a request's ``model`` field."""
    return spec.split(":", 1)[1] if ":" in spec else spec


_NO_MODEL = (
    "no model chosen: pass --model PROVIDER:MODEL (for example openai:gpt-4.1 with OPENAI_API_KEY set, "
    "ollama:llama3.1, or replay:PATH for a scripted conversation) or set models.default in the settings"
)


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


@dataclass
class SessionOptions:
    """What a surface knows when it opens a session; anything left ``None`` comes from the settings."""

    workspace: Path
    model: str | None = None
    mode: str | None = None
    base_url: str | None = None
    sandbox: Literal["auto", "off"] | None = None
    """``None``: the user's settings decide (a project's settings can never turn the sandbox off)."""
    auto_approve: bool = False
    approver: Approver | None = None
    surface: str = "sdk"
    config_file: Path | None = None
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
    subagent: SubagentSpec | None = None
    """Set when the session is a sub-agent: what it takes from its parent (``runtime/subagent.py``)."""
    hooks: list[FunctionHook] = field(default_factory=list)
    """Python callables run as hooks after the settings' command hooks (the SDK's ``Agent(hooks=...)``; a
    parent session hands its own to a child)."""
    project_trust: bool | None = None
    """Whether the workspace's project settings are trusted: ``None`` lets the user's trust store decide (by
    the hash of the settings file as loaded); the server passes its own decision (``trustedRoots``). Nothing
    else, ``auto_approve`` included, trusts a project."""


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


class Session:
    hooks: HookRunner
    """The session's hooks; ``hooks.add(event, fn, matcher=...)`` registers a Python callable."""
    mcp: SessionMcp
    """The session's MCP servers; they start with the first turn (or ``await session.start_mcp()``)."""

    def __init__(
        self,
        *,
        session_id: str,
        workspace: Path,
        settings: Settings,
        mode: str,
        model: Model,
        model_spec: str,
        registry: ToolRegistry,
        events: EventStream,
        loop: AgentLoop,
        audit: AuditLog,
        sandbox: str,
        context: ConversationContext,
        history: list[Message],
        policy: PolicyEngine,
        pipeline: ToolCallPipeline,
        deps: PipelineDeps,
        router: ModelRouter,
        owns_router: bool,
    ) -> None:
        self.id = session_id
        self.workspace = workspace
        self.settings = settings
        self.mode = mode
        self.model_spec = model_spec
        self.registry = registry
        self.audit = audit
        self.sandbox = sandbox
        self.context = context
        self._model = model
        self._events = events
        self._loop = loop
        self._lock = asyncio.Lock()
        self._history = history
        self._policy = policy
        self._pipeline = pipeline
        self._deps = deps
        self._router = router
        self._owns_router = owns_router

    @property
    def history(self) -> tuple[Message, ...]:
        """The messages the model has seen so far (without the system prompt)."""
        return tuple(self._history)

    @classmethod
    def open(cls, options: SessionOptions) -> Session:
        """Build a session; configuration problems raise ``SettingsError`` or ``ModelError`` before any turn."""
        workspace = options.workspace.expanduser()
        if not workspace.is_dir():
            raise SettingsError(f"workspace {workspace} is not a directory")
        workspace = workspace.resolve()
        paths = options.paths or SeepientPaths.from_env(dict(options.environ) if options.environ else None)
        # A sub-agent works under its parent's settings, never those of the checkout it works in.
        workspace_rules = paths.workspace_rules(workspace, options.principal)
        settings = (
            options.subagent.settings
            if options.subagent is not None
            else load_settings(
                workspace,
                paths=paths,
                config_file=options.config_file,
                project_trust=options.project_trust,
                workspace_rules=workspace_rules,
            )
        )
        mode = normalise_mode(options.mode or settings.permissions.mode or "ask-untrusted")
        sandbox = options.sandbox or settings.execution.sandbox
        if not (options.model or settings.models.default or settings.models.routes):
            raise SettingsError(_NO_MODEL + _ignored_model_choice(settings))
        router = options.router or ModelRouter(
            settings.models, model_override=options.model, base_url=options.base_url, environ=options.environ
        )
        model = router.route("text", "standard")
        if options.resumed:
            router.resume_replays(sum(1 for message in options.history if message.role == "assistant"))
        spec = model.name
        # Summaries and the auto-mode classifier use the efficient tier; with a replay script there is none
        # (a script is the whole conversation), so they ask the session's own model.
        helper_model = router.efficient() or model
        helper_name = _model_id(helper_model.name)

        session_id = options.session_id or new_id("ses")
        events = EventStream(session_id, keep=options.event_history)
        registry = builtin_registry(settings)
        for tool in options.extra_tools:
            registry.register(tool)
        try:
            net_policy = policy_from_settings(settings.net)
        except ValueError as exc:
            raise SettingsError(f"settings: net: {exc}") from None
        # Seepient's own files kept outside its home (an audit key, a witness) are as unreadable to the
        # model, and as invisible in the jail, as the home itself.
        own_files = [
            p for p in (settings.audit.signing_key(paths), settings.audit.witness()) if p is not None
        ]
        own_files += [p.with_name(p.name + ".pub") for p in own_files[:1]]
        policy = PolicyEngine(
            workspace,
            seepient_home=paths.home,
            mode=mode,
            permissions=settings.permissions,
            sources=options.subagent.sources if options.subagent is not None else None,
            net_policy=net_policy,
            protected=own_files,
        )
        local = LocalExecutor(
            workspace,
            sandbox=sandbox,
            seepient_home=paths.home,
            max_output_bytes=settings.execution.max_output_bytes,
            environ=options.environ,
            net_policy=net_policy,
            # A command approved with the network capability reaches the network only through Seepient's
            # proxy, which applies the same address policy and Fetch deny rules as web_fetch.
            network_egress="filtered",
            egress_domain_check=policy.refused_host,
            background=BackgroundProcesses(
                max_running=settings.execution.max_background_processes,
                buffer_bytes=settings.execution.background_buffer_bytes,
            ),
            language_servers=server_configs(settings.lsp),
            lsp_request_timeout_s=settings.lsp.request_timeout_ms / 1000,
            lsp_diagnostics_wait_s=settings.lsp.diagnostics_wait_ms / 1000,
            jail_readable=[Path(p).expanduser() for p in settings.execution.sandbox_readable],
            jail_hidden=[*(Path(p).expanduser() for p in settings.execution.sandbox_hidden), *own_files],
            foreign_config_allowed=policy.user_allows_workspace_write,
        )
        executor: ActionExecutor = local
        signer, witness = _audit_key_and_witness(settings, paths, workspace)
        audit = (
            options.subagent.audit_log(
                paths.audit_log, options.principal, signer=signer, witness_path=witness
            )
            if options.subagent is not None
            else AuditLog(paths.audit_log, principal=options.principal, signer=signer, witness_path=witness)
        )
        # A sub-agent's parent already looked; a top-level session closes what earlier runs left interrupted.
        interrupted = close_interrupted(audit, session_id, workspace) if options.subagent is None else None
        if settings.execution.backend == "docker-worker":
            # Worker mode: shell commands and file commits go to the scheduler; this process only reads.
            from seepient.execution.docker_worker import DockerWorkerExecutor

            executor = DockerWorkerExecutor.from_settings(
                settings.execution, workspace=workspace, local=local, session_id=session_id, audit=audit
            )
        history: list[Message] = list(options.history)
        broker = ApprovalBroker(
            options.approver,
            auto_approve=options.auto_approve,
            scopes=ScopeFinder(policy.workspace, policy.guard, home=policy.guard.home),
            # "Always for this project" is the user's decision: it goes to the user's rules for this workspace,
            # never into the repository's file.
            project_settings=None if options.subagent is not None else workspace_rules,
            on_grant=options.on_grant,
        )
        for kind, value in options.grants:
            broker.restore_grant(kind, value)
        classifier = AutoModeClassifier(helper_model, model_name=helper_name) if mode == "auto" else None
        hooks = HookRunner(
            settings.hooks,
            workspace=workspace,
            session_id=session_id,
            environ=options.environ,
            # The same list: a hook added to the open session reaches the options sub-agents are opened with.
            functions=options.hooks,
        )
        deps = PipelineDeps(
            registry=registry,
            policy=policy,
            broker=broker,
            executor=executor,
            reads=local.reads,
            audit=audit,
            events=events,
            workspace=workspace,
            session_id=session_id,
            model_name=spec,
            surface=options.surface,
            default_timeout_ms=settings.execution.default_timeout_ms,
            classifier=classifier,
            transcript=history,
            model_for=lambda purpose: router.route(purpose, "standard"),
            pre_hooks=[hooks.pre_tool_use],
            post_hooks=[hooks.post_tool_use],
        )
        if settings.lsp.diagnostics_after_edit:
            deps.post_hooks.append(
                EditDiagnostics(executor, local.reads, workspace, policy.guard, session_id)
            )
        context = ConversationContext.open(
            workspace,
            settings=settings,
            seepient_home=paths.home,
            consent_mode=mode,
            sandboxed=sandbox != "off",
            skills=options.skills,
            summary_model=helper_model,
            summary_model_name=helper_name,
            guard=policy.guard,
            environ=options.environ,
            git_jail=local.read_only_jail,
        )
        pipeline = ToolCallPipeline(deps)
        skill_tool = registry.get(SkillTool.name)
        if isinstance(skill_tool, SkillTool):
            skill_tool.bind(context.skills)
        todo_tool = registry.get(TodoWriteTool.name)
        if isinstance(todo_tool, TodoWriteTool):
            todo_tool.bind(lambda items: events.emit(TodoUpdated, items=items))
        if interrupted is not None and (interrupted.lines or interrupted.problem):
            context.assembled = dataclasses.replace(
                context.assembled,
                warnings=(
                    *context.assembled.warnings,
                    *(ContextWarning("audit log", line) for line in interrupted.lines),
                    *((ContextWarning("audit log", interrupted.problem),) if interrupted.problem else ()),
                ),
            )
        if settings.project is not None and options.subagent is None:
            project = settings.project
            context.assembled = dataclasses.replace(
                context.assembled,
                warnings=(
                    *context.assembled.warnings,
                    *(ContextWarning(str(project.path), line) for line in project.warnings(workspace)),
                ),
            )
        loop = AgentLoop(
            model=model,
            model_name=_model_id(spec),
            registry=registry,
            pipeline=pipeline,
            events=events,
            history=history,
            system_prompt=context.system_prompt(),
            max_steps=options.max_steps or settings.runtime.max_steps,
            context=context,
            max_parallel_tools=settings.runtime.max_parallel_tools,
            stop_hook=hooks.stop,
            start_hook=hooks.session_start,
        )
        session = cls(
            session_id=session_id,
            workspace=workspace,
            settings=settings,
            mode=mode,
            model=model,
            model_spec=spec,
            registry=registry,
            events=events,
            loop=loop,
            audit=audit,
            sandbox=sandbox,
            context=context,
            history=history,
            policy=policy,
            pipeline=pipeline,
            deps=deps,
            router=router,
            owns_router=options.router is None,
        )
        session.hooks = hooks
        session.mcp = SessionMcp(
            settings=settings,
            workspace=workspace,
            registry=registry,
            connector=HostMcpConnector(
                workspace,
                environ=options.environ,
                net_policy=net_policy,
                domain_check=policy.refused_host,
            ),
            events=events,
            audit=audit,
            approver=options.approver,
            session_id=session_id,
            model_name=spec,
            surface=options.surface,
        )
        bind_subagents(session, options, paths)
        return session

    @property
    def todos(self) -> tuple[TodoItem, ...]:
        """The todo list the model keeps with ``todo_write`` (empty until it writes one)."""
        tool = self.registry.get(TodoWriteTool.name)
        return tool.items if isinstance(tool, TodoWriteTool) else ()

    def set_mode(self, mode: str) -> str:
        """Switch the consent mode for the next action (a surface's mode toggle); returns the canonical name.

        Raises ``SettingsError`` for an unknown mode or one the managed settings switch off."""
        policy, deps = self._policy, self._deps
        canonical = normalise_mode(mode)
        if canonical in policy.rules.disabled_modes:
            raise SettingsError(f"the managed settings switch the {canonical} mode off")
        policy.mode = canonical
        self.context.set_consent_mode(canonical)
        if canonical == "auto" and deps.classifier is None:
            helper = self._router.efficient() or self._model
            deps.classifier = AutoModeClassifier(helper, model_name=_model_id(helper.name))
        elif canonical != "auto":
            deps.classifier = None
        self.mode = canonical
        return canonical

    async def compact(self) -> bool:
        """Compact the history now (``/compact``); False when there was nothing to shorten."""
        async with self._lock:
            result = await self.context.fit(
                self.context.system_prompt(), self._history, tuple(self.registry.specs()), force=True
            )
            if result is None:
                return False
            self._history[:] = result.messages
            self._events.emit(CompactionEvent, turn_id=None, **result.event_fields())
            return True

    def subscribe(self, listener: EventListener) -> None:
        self._events.subscribe(listener)

    def events_since(self, seq: int) -> list[RuntimeEvent]:
        return self._events.since(seq)

    def model_for(self, purpose: Purpose) -> Model:
        """The model for ``purpose`` at the standard tier: its route from the settings, with ``--model`` as its
        primary when given."""
        return self._router.route(purpose, "standard")

    async def run(
        self, prompt: str, images: tuple[ImagePart, ...] = (), *, plan: bool = False
    ) -> TurnOutcome:
        """Run one turn. Turns never overlap: a second call waits for the first.

        With ``images`` the turn is answered by the ``vision`` route. With ``plan`` it is a planning turn (on
        the ``plan`` route unless it carries images): only read-only tools are offered and run, and the final
        text is the plan; the surface approves it and continues with an ordinary turn in the same history."""
        # Images decide the route even in plan mode: a plan model that cannot see them would answer blind.
        purpose: Purpose | None = "vision" if images else ("plan" if plan else None)
        async with self._lock:
            await self.mcp.start()
            if purpose is None:
                return await self._loop.run_turn(prompt)
            model = self.model_for(purpose)
            return await self._loop.run_turn(
                prompt, images, model=model, model_name=_model_id(model.name), plan=plan
            )

    async def carry_out_plan(self) -> TurnOutcome:
        """Continue after the user approved the plan the last planning turn ended with: an ordinary turn in
        the same history, with every tool offered again (each action still goes through policy)."""
        return await self.run(PLAN_APPROVED_PROMPT)

    async def perform(self, call: ToolCall) -> CallResult:
        """Run one action Seepient itself prepared for the user (``seepient commit``'s ``git commit``), not
        the model's, through the same pipeline: policy, approval, execution and audit."""
        async with self._lock:
            await self.mcp.start()
            return await self._pipeline.run(call, new_id("turn"))

    async def start_mcp(self) -> None:
        """Start the configured MCP servers now rather than with the first turn (to list their tools);
        problems become ``error`` events and the session goes on."""
        async with self._lock:
            await self.mcp.start()

    async def aclose(self) -> None:
        # Background processes and language servers die with the session.
        await self._deps.executor.aclose()
        await self.mcp.aclose()
        await self._model.aclose()
        if self._owns_router:
            await self._router.aclose()
        self.audit.close()
