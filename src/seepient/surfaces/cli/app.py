"""The Typer application behind ``seepient``: one function per command, each a thin layer over the runtime."""

from __future__ import annotations

import asyncio
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from seepient import __version__
from seepient.surfaces.cli import exit_codes, options
from seepient.surfaces.cli.command_words import opens_the_tui
from seepient.surfaces.cli.failure import fail, workspace_dir
from seepient.surfaces.cli.options import (
    BaseUrl,
    ConfigFile,
    JsonEvents,
    JsonObject,
    Mode,
    Model,
    Sandbox,
    Skills,
    Workspace,
    Yes,
)
from seepient.surfaces.cli.turn import drive_turn

if TYPE_CHECKING:
    from seepient.config import SeepientPaths
    from seepient.config.sections import AuditSettings
    from seepient.surfaces.cli.run_sessions import Resumed

app = typer.Typer(
    name="seepient",
    help="Seepient: an AI coding agent whose every action is checked, approved, sandboxed and audited.\n\n"
    + exit_codes.HELP,
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
sandbox_app = typer.Typer(help="Run commands in the sandbox the shell tool uses.", no_args_is_help=True)
audit_app = typer.Typer(help="Check, read and export the tamper-evident audit log.", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(audit_app, name="audit")


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"seepient {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_version_callback, is_eager=True, help="Print the version."),
    ] = False,
    model: Annotated[
        str | None, typer.Option(help="With no command: the TUI's model, PROVIDER:MODEL or replay:PATH.")
    ] = None,
    workspace: Annotated[Path, typer.Option(help="With no command: the TUI's project folder.")] = Path("."),
    mode: Annotated[str | None, typer.Option(help="With no command: the TUI's consent mode.")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="With no command: point the TUI's model provider at another server.")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(help="With no command: an extra settings file (JSON) for the TUI, as run takes."),
    ] = None,
    continue_latest: Annotated[
        bool,
        typer.Option("--continue", "-c", help="With no command: continue this workspace's latest session."),
    ] = False,
    resume: Annotated[
        str | None, typer.Option("--resume", help="With no command: continue the stored session ID.")
    ] = None,
) -> None:
    """Seepient command line. With no command on a terminal, opens the full-screen UI."""
    if ctx.invoked_subcommand is not None:
        if continue_latest or resume is not None:
            raise fail("--continue and --resume go after the command: seepient run --continue …")
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        typer.echo(ctx.get_help())
        raise typer.Exit(exit_codes.USAGE)
    if continue_latest and resume is not None:
        raise fail("give --continue or --resume ID, not both")
    from seepient.surfaces.tui import run_tui

    resumed = _resumable(_home(), workspace, continue_latest=continue_latest, resume_id=resume)

    def _options() -> object:
        from seepient.runtime import SessionOptions

        return SessionOptions(
            workspace=workspace,
            model=model,
            mode=mode,
            base_url=base_url,
            config_file=config,
            surface="tui",
            **_resumed_fields(resumed),
        )

    raise typer.Exit(run_tui(_options))  # type: ignore[arg-type]


def _read_prompt(prompt: str | None) -> str:
    if prompt is None or prompt == "-":
        if sys.stdin.isatty():
            raise fail("give a prompt as an argument, or pipe it on stdin")
        text = sys.stdin.read()
    else:
        text = prompt
    if not text.strip():
        raise fail("the prompt is empty")
    return text


def _read_images(paths: list[Path]) -> tuple[object, ...]:
    """Each ``--image`` file as a base64 image part; its type comes from its bytes, not its name."""
    from seepient.surfaces.images import read_image_file

    parts = []
    for path in paths:
        try:
            parts.append(read_image_file(path))
        except ValueError as exc:
            raise fail(f"--image {path}: {exc}") from None
    return tuple(parts)


def _plan_approver(*, yes: bool, interactive: bool) -> Callable[[str], bool]:
    def approve(plan: str) -> bool:
        if yes:
            return True
        if not interactive:
            typer.echo(
                "seepient: plan only; nothing was changed. Run again with -y to carry it out.", err=True
            )
            return False
        approved = typer.confirm("\nCarry out this plan?", default=False, err=True)
        if not approved:
            typer.echo("seepient: plan not approved; nothing was changed.", err=True)
        return approved

    return approve


def _turn_exit_code(reason: str, *, refused: bool = False) -> int:
    """A model error, the step limit and Ctrl-C outrank a headless refusal; a refusal outranks success."""
    return {
        "final": exit_codes.REFUSED if refused else exit_codes.OK,
        "step_limit": exit_codes.STEP_LIMIT,
        "budget": exit_codes.STEP_LIMIT,
        "interrupted": exit_codes.INTERRUPTED,
    }.get(reason, exit_codes.FAILED)


@app.command()
def run(
    prompt: Annotated[
        str | None, typer.Argument(help="What to do. Read from stdin when absent or '-'.")
    ] = None,
    yes: Yes = False,
    mode: Mode = None,
    model: Model = None,
    base_url: BaseUrl = None,
    workspace: Workspace = Path("."),
    sandbox: Sandbox = "auto",
    config: ConfigFile = None,
    max_steps: Annotated[int | None, typer.Option(help="Stop the turn after this many model calls.")] = None,
    json_output: JsonEvents = False,
    skill: Skills = None,
    image: Annotated[
        list[Path] | None,
        typer.Option(
            "--image", help="Attach a PNG, JPEG, GIF or WebP image (repeatable); the vision route answers."
        ),
    ] = None,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Plan first with read-only tools on the plan route; carry the plan out only once approved (-y approves).",
        ),
    ] = False,
    continue_latest: Annotated[
        bool,
        typer.Option(
            "--continue", "-c", help="Continue this workspace's latest stored session (run's or the TUI's)."
        ),
    ] = False,
    resume: Annotated[
        str | None,
        typer.Option("--resume", help="Continue the stored session ID (`seepient sessions list`)."),
    ] = None,
    ephemeral: Annotated[
        bool, typer.Option("--ephemeral", help="Do not store this session in the home database.")
    ] = False,
) -> None:
    """Run one turn of the agent on PROMPT. With no terminal on stdin and no -y, anything that needs approval is
    refused (exit 5). Sessions are stored in the home database unless --ephemeral."""
    from seepient.approval.terminal import TerminalApprover
    from seepient.config import SettingsError
    from seepient.surfaces.cli.headless import RefusalLog
    from seepient.surfaces.cli.render import HumanRenderer, JsonRenderer

    sandbox_choice = options.sandbox_choice(sandbox)
    if continue_latest and resume is not None:
        raise fail("give --continue or --resume ID, not both")
    if ephemeral and (continue_latest or resume is not None):
        raise fail("--ephemeral starts a session that is not stored; it cannot continue one")
    text = _read_prompt(prompt)
    images = _read_images(image or [])
    interactive = sys.stdin.isatty() and prompt not in (None, "-")
    approver = TerminalApprover(out=sys.stderr) if interactive and not yes else None
    home = _home()
    resumed = _resumable(home, workspace, continue_latest=continue_latest, resume_id=resume)
    recorder = None
    if not ephemeral:
        # Only a stored session loads the store (SQLAlchemy is a fifth of a run's start).
        from seepient.surfaces.cli.run_sessions import RunRecorder

        recorder = RunRecorder(home)
    if approver is not None:
        # Only a person at the terminal can trust a project; -y and a run without a terminal never do.
        from seepient.surfaces.cli.trust_cmd import ask_first_use

        try:
            ask_first_use(workspace)
        except SettingsError as exc:
            raise fail(str(exc), exit_codes.exit_code_for(exc)) from None
    session = options.open_session(
        workspace=workspace,
        model=model,
        mode=mode,
        base_url=base_url,
        sandbox=sandbox_choice,
        auto_approve=yes,
        approver=approver,
        config_file=config,
        max_steps=max_steps,
        skills=skill or [],
        on_grant=recorder.on_grant if recorder is not None else None,
        **_resumed_fields(resumed),
    )
    from seepient.surfaces.cli.entry import startup_done

    startup_done()
    for warning in session.context.warnings if session.context is not None else ():
        typer.echo(f"seepient: warning: {warning}", err=True)
    if sandbox_choice == "off":
        typer.echo(options.SANDBOX_OFF_WARNING, err=True)
    if resumed is not None:
        typer.echo(f"seepient: continuing session {resumed.session_id} ({resumed.turns} turn(s))", err=True)
    session.subscribe(JsonRenderer() if json_output else HumanRenderer())
    refusals = RefusalLog()
    session.subscribe(refusals)
    approve_plan = _plan_approver(yes=yes, interactive=interactive) if plan else None
    outcome = drive_turn(session, text, images, approve_plan, recorder)
    refusals.report(sys.stderr)
    raise typer.Exit(_turn_exit_code(outcome.reason, refused=bool(refusals.refused)))  # type: ignore[attr-defined]


def _home() -> Path:
    from seepient.config import SeepientPaths

    return SeepientPaths.from_env().home


def _resumable(
    home: Path, workspace: Path, *, continue_latest: bool, resume_id: str | None
) -> Resumed | None:
    """The stored session ``--continue``/``--resume`` names (exit 2 with the reason when there is none)."""
    if not continue_latest and resume_id is None:
        return None
    from seepient.surfaces.cli.run_sessions import ResumeError, find_resumable

    try:
        return asyncio.run(find_resumable(home, workspace_dir(workspace), resume_id=resume_id))
    except ResumeError as exc:
        raise fail(str(exc)) from None


def _resumed_fields(resumed: Resumed | None) -> dict[str, Any]:
    """The ``SessionOptions`` fields that continue a stored session: its id, history, replay position, grants."""
    if resumed is None:
        return {}
    return {
        "session_id": resumed.session_id,
        "history": resumed.history,
        "grants": resumed.grants,
        "resumed": True,
    }


@app.command()
def demo(
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Approve the demo's own actions without asking.")
    ] = False,
    json_output: JsonEvents = False,
) -> None:
    """Fix a failing test in a bundled project with a scripted model, through the real pipeline, offline."""
    from seepient.surfaces.cli.demo import run_demo

    raise typer.Exit(run_demo(yes=yes, json_output=json_output))


@sandbox_app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def sandbox_run(
    command: Annotated[list[str], typer.Argument(help="The command and its arguments, after --.")],
    network: Annotated[
        bool,
        typer.Option(
            "--network",
            help="Give the command the network through Seepient's filtering proxy (no private, loopback or "
            "metadata addresses), as the shell tool does.",
        ),
    ] = False,
    workspace: Annotated[Path, typer.Option(help="The folder the command may write to.")] = Path("."),
) -> None:
    """Run COMMAND in the very sandbox the shell tool uses; its stdout, stderr and exit code pass through."""
    from seepient.config import SeepientPaths, SettingsError, load_settings
    from seepient.execution.jail import run_sandboxed
    from seepient.net import policy_from_settings
    from seepient.net.egress_proxy import EgressProxy
    from seepient.protocol import SandboxUnavailable

    if not command:
        raise fail("give a command after --, e.g. seepient sandbox run -- ls -la")
    ws = workspace_dir(workspace)
    paths = SeepientPaths.from_env()
    try:
        settings = load_settings(ws, paths=paths)
    except SettingsError as exc:
        raise fail(str(exc), exit_codes.exit_code_for(exc)) from None

    async def _run() -> object:
        run = functools.partial(
            run_sandboxed, list(command), workspace=ws, cwd=ws, seepient_home=paths.home, stdio="inherit"
        )
        if not network:
            return await run(network=False)
        async with EgressProxy(policy=policy_from_settings(settings.net)) as proxy:
            return await run(network=True, egress=proxy)

    try:
        outcome = asyncio.run(_run())
    except SandboxUnavailable as exc:
        raise fail(str(exc), exit_codes.SANDBOX_UNAVAILABLE) from None
    if outcome.stderr:  # type: ignore[attr-defined]
        typer.echo(outcome.stderr.rstrip(), err=True)  # type: ignore[attr-defined]
    if outcome.timed_out:  # type: ignore[attr-defined]
        raise fail("the command timed out", 124)
    code = outcome.exit_code  # type: ignore[attr-defined]
    raise typer.Exit(code if code is not None else exit_codes.FAILED)


@audit_app.command("verify")
def audit_verify(
    log: Annotated[
        Path | None, typer.Option(help="The log to check (default: the audit log in SEEPIENT_HOME).")
    ] = None,
    public_key: Annotated[
        Path | None,
        typer.Option(
            "--public-key",
            help="The audit signing key's public key (default: audit-signing.pub beside the key in "
            "SEEPIENT_HOME/keys, or audit.signingKeyPath's).",
        ),
    ] = None,
    witness: Annotated[
        Path | None,
        typer.Option(
            help="A witness file to check the log against (default for the default log: audit.witnessPath)."
        ),
    ] = None,
    json_output: JsonObject = False,
) -> None:
    """Check every record's hash chain, the signed head checkpoint and the witness; list interrupted actions.

    Exit 0 when intact (interrupted actions are listed but are not tampering), 1 naming the first bad record."""
    from seepient.audit.report_text import format_report
    from seepient.audit.signing import public_key_path
    from seepient.audit.verify import verify_log
    from seepient.config import SeepientPaths

    paths = SeepientPaths.from_env()
    audit = _user_audit_settings(paths)
    path = log or paths.audit_log
    if public_key is None:
        default_key = public_key_path(audit.signing_key(paths))
        public_key = default_key if default_key.exists() else None
    if witness is None and log is None:
        witness = audit.witness()
    report = verify_log(path, public_key=public_key, witness=witness)
    if json_output:
        typer.echo(json.dumps(report.model_dump(mode="json")))
    else:
        typer.echo(format_report(report))
    raise typer.Exit(exit_codes.OK if report.ok else exit_codes.FAILED)


def _user_audit_settings(paths: SeepientPaths) -> AuditSettings:
    """The ``audit`` block of the user's and the managed settings (a project's never counts for the audit)."""
    from seepient.config.sections import AuditSettings
    from seepient.config.settings import managed_settings_path

    merged: dict[str, Any] = {}
    for source in (paths.user_settings, managed_settings_path()):
        try:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            raise fail(f"{source}: cannot read settings ({exc})") from None
        block = data.get("audit") if isinstance(data, dict) else None
        if isinstance(block, dict):
            merged.update(block)
    try:
        return AuditSettings.model_validate(merged)
    except ValueError as exc:
        raise fail(f"audit settings: {exc}") from None


def _register_commands() -> None:
    """Commands that live in their own modules register here, one line each (``register(app)``)."""
    from seepient.surfaces.cli import models_cmd

    models_cmd.register(app)
    from seepient.surfaces.cli import net_cmd

    net_cmd.register(app)
    from seepient.surfaces.cli import context_cmd

    context_cmd.register(app)
    from seepient.surfaces.cli import serve_cmd, tokens_cmd

    serve_cmd.register(app)
    tokens_cmd.register(app)
    from seepient.surfaces.cli import policy_cmd

    policy_cmd.register(app)
    from seepient.surfaces.cli import certs_cmd

    certs_cmd.register(app)
    from seepient.surfaces.cli import commit_cmd

    commit_cmd.register(app)
    from seepient.surfaces.cli import scheduler_cmd, worker_cmd

    scheduler_cmd.register(app)
    worker_cmd.register(app)
    from seepient.surfaces.cli import tools_cmd

    tools_cmd.register(app)
    from seepient.surfaces.cli import knowledge_cmd

    knowledge_cmd.register(app)
    from seepient.surfaces.cli import trust_cmd

    trust_cmd.register(app)
    from seepient.surfaces.cli import completion_cmd

    completion_cmd.register(app)
    from seepient.surfaces.cli import doctor_cmd, init_cmd

    doctor_cmd.register(app)
    init_cmd.register(app)
    from seepient.surfaces.cli import acp_cmd

    acp_cmd.register(app)
    from seepient.surfaces.cli import sessions_cmd

    sessions_cmd.register(app)
    from seepient.surfaces.cli import audit_cmd

    audit_cmd.register(audit_app)


def run_app() -> None:
    import os

    from seepient.surfaces.cli.completion_cmd import COMPLETE_VAR, answer_completion_requests

    # ``run``, the command that starts most often, lives in this module: when it is the one asked for, the
    # other commands' modules and Typer's conversion of them (~30 ms) are left out; so they are when no
    # command is named on a terminal, which opens the TUI (their modules would load the runtime before its
    # first frame).
    if os.environ.get(COMPLETE_VAR) or not (sys.argv[1:2] == ["run"] or opens_the_tui(sys.argv[1:])):
        _register_commands()
    answer_completion_requests()
    app()
