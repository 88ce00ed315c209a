"""The Typer application behind ``seepient``: one function per command, each a thin layer over the runtime."""

from __future__ import annotations

import asyncio
import functools
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from seepient import __version__
from seepient.surfaces.cli import exit_codes

if TYPE_CHECKING:
    from seepient.config import SeepientPaths
    from seepient.config.settings import AuditSettings

app = typer.Typer(
    name="seepient",
    help="Seepient: an AI coding agent whose every action is checked, approved, sandboxed and audited.\n\n"
    + exit_codes.HELP,
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
sandbox_app = typer.Typer(help="Run commands in the sandbox the shell tool uses.", no_args_is_help=True)
audit_app = typer.Typer(help="Check the tamper-evident audit log.", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(audit_app, name="audit")


def _fail(message: str, code: int = exit_codes.USAGE) -> typer.Exit:
    typer.echo(f"seepient: {message}", err=True)
    return typer.Exit(code)


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
) -> None:
    """Seepient command line. With no command on a terminal, opens the full-screen UI."""
    if ctx.invoked_subcommand is not None:
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        typer.echo(ctx.get_help())
        raise typer.Exit(exit_codes.USAGE)
    from seepient.surfaces.tui import run_tui

    def _options() -> object:
        from seepient.runtime import SessionOptions

        return SessionOptions(workspace=workspace, model=model, mode=mode, surface="tui")

    raise typer.Exit(run_tui(_options))  # type: ignore[arg-type]


def _read_prompt(prompt: str | None) -> str:
    if prompt is None or prompt == "-":
        if sys.stdin.isatty():
            raise _fail("give a prompt as an argument, or pipe it on stdin")
        text = sys.stdin.read()
    else:
        text = prompt
    if not text.strip():
        raise _fail("the prompt is empty")
    return text


def _read_images(paths: list[Path]) -> tuple[object, ...]:
    """Each ``--image`` file as a base64 image part; its type comes from its bytes, not its name."""
    from seepient.surfaces.images import read_image_file

    parts = []
    for path in paths:
        try:
            parts.append(read_image_file(path))
        except ValueError as exc:
            raise _fail(f"--image {path}: {exc}") from None
    return tuple(parts)


def _drive_turn(
    session: object,
    prompt: str,
    images: tuple[object, ...] = (),
    approve_plan: Callable[[str], bool] | None = None,
) -> object:
    """Run one turn; the first Ctrl-C cancels it, which ends the turn cleanly after the current action.

    With ``approve_plan`` the turn is a planning turn; when it ends with a plan and ``approve_plan`` accepts
    it, a second turn carries the plan out in the same history."""
    from seepient.runtime import Session

    assert isinstance(session, Session)

    async def _turns() -> object:
        if approve_plan is None:
            return await session.run(prompt, images)  # type: ignore[arg-type]
        planned = await session.run(prompt, images, plan=True)  # type: ignore[arg-type]
        if planned.reason != "final" or not await asyncio.to_thread(approve_plan, planned.text):
            return planned
        return await session.carry_out_plan()

    async def _main() -> object:
        loop = asyncio.get_running_loop()
        turn = asyncio.ensure_future(_turns())
        loop.add_signal_handler(signal.SIGINT, turn.cancel)
        try:
            return await turn
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            await session.aclose()

    return asyncio.run(_main())


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


def _turn_exit_code(reason: str) -> int:
    return {
        "final": exit_codes.OK,
        "step_limit": exit_codes.STEP_LIMIT,
        "interrupted": exit_codes.INTERRUPTED,
    }.get(reason, exit_codes.FAILED)


@app.command()
def run(
    prompt: Annotated[
        str | None, typer.Argument(help="What to do. Read from stdin when absent or '-'.")
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Approve what policy would ask about (never what it denies).")
    ] = False,
    mode: Annotated[
        str | None,
        typer.Option(
            help="Consent mode: always-ask, ask-untrusted (default; alias on-request), auto (a classifier decides what would ask), autonomous-trusted (alias bypass)."
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="PROVIDER:MODEL, e.g. openai:gpt-4.1, ollama:llama3.1, replay:PATH.")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="Point the model's provider at another compatible server.")
    ] = None,
    workspace: Annotated[Path, typer.Option(help="The project folder; writes stay inside it.")] = Path("."),
    sandbox: Annotated[
        str, typer.Option(help="auto: shell commands run in bubblewrap or are refused; off: no sandbox.")
    ] = "auto",
    config: Annotated[
        Path | None,
        typer.Option(help="An extra settings file (JSON), applied over user and project settings."),
    ] = None,
    max_steps: Annotated[int | None, typer.Option(help="Stop the turn after this many model calls.")] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print runtime events as JSON lines on stdout.")
    ] = False,
    skill: Annotated[
        list[str] | None,
        typer.Option("--skill", help="Give the model this skill's full instructions (repeatable)."),
    ] = None,
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
) -> None:
    """Run one turn of the agent on PROMPT. With no terminal on stdin and no -y, anything that needs approval is refused."""
    from seepient.approval.terminal import TerminalApprover
    from seepient.config import SettingsError
    from seepient.models.base import ModelError
    from seepient.runtime import Session, SessionOptions
    from seepient.surfaces.cli.render import HumanRenderer, JsonRenderer

    if sandbox not in ("auto", "off"):
        raise _fail("--sandbox must be auto or off")
    text = _read_prompt(prompt)
    images = _read_images(image or [])
    interactive = sys.stdin.isatty() and prompt not in (None, "-")
    approver = TerminalApprover(out=sys.stderr) if interactive and not yes else None
    sandbox_choice: Literal["auto", "off"] = "off" if sandbox == "off" else "auto"
    try:
        if approver is not None:
            # Only a person at the terminal can trust a project; -y and a run without a terminal never do.
            from seepient.surfaces.cli.trust_cmd import ask_first_use

            ask_first_use(workspace)
        session = Session.open(
            SessionOptions(
                workspace=workspace,
                model=model,
                mode=mode,
                base_url=base_url,
                sandbox=sandbox_choice,
                auto_approve=yes,
                approver=approver,
                surface="cli",
                config_file=config,
                max_steps=max_steps,
                skills=skill or [],
            )
        )
    except (SettingsError, ModelError) as exc:
        raise _fail(str(exc)) from None
    for warning in session.context.warnings if session.context is not None else ():
        typer.echo(f"seepient: warning: {warning}", err=True)
    if sandbox_choice == "off":
        typer.echo(
            "seepient: warning: --sandbox off: shell commands run unsandboxed on this machine", err=True
        )
    session.subscribe(JsonRenderer() if json_output else HumanRenderer())
    approve_plan = _plan_approver(yes=yes, interactive=interactive) if plan else None
    outcome = _drive_turn(session, text, images, approve_plan)
    raise typer.Exit(_turn_exit_code(outcome.reason))  # type: ignore[attr-defined]


@app.command()
def demo(
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Approve the demo's own actions without asking.")
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print runtime events as JSON lines on stdout.")
    ] = False,
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
        raise _fail("give a command after --, e.g. seepient sandbox run -- ls -la")
    ws = workspace.expanduser()
    if not ws.is_dir():
        raise _fail(f"workspace {ws} is not a directory")
    ws = ws.resolve()
    paths = SeepientPaths.from_env()
    try:
        settings = load_settings(ws, paths=paths)
    except SettingsError as exc:
        raise _fail(str(exc)) from None

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
        raise _fail(str(exc), exit_codes.SANDBOX_UNAVAILABLE) from None
    if outcome.stderr:  # type: ignore[attr-defined]
        typer.echo(outcome.stderr.rstrip(), err=True)  # type: ignore[attr-defined]
    if outcome.timed_out:  # type: ignore[attr-defined]
        raise _fail("the command timed out", 124)
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
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
) -> None:
    """Check every record's hash chain, the signed head checkpoint and the witness; list interrupted actions.

    Exit 0 when intact (interrupted actions are listed but are not tampering), 1 naming the first bad record."""
    from seepient.audit.signing import public_key_path
    from seepient.audit.verify import format_report, verify_log
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
    from seepient.config.settings import AuditSettings, managed_settings_path

    merged: dict[str, Any] = {}
    for source in (paths.user_settings, managed_settings_path()):
        try:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            raise _fail(f"{source}: cannot read settings ({exc})") from None
        block = data.get("audit") if isinstance(data, dict) else None
        if isinstance(block, dict):
            merged.update(block)
    try:
        return AuditSettings.model_validate(merged)
    except ValueError as exc:
        raise _fail(f"audit settings: {exc}") from None


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


def run_app() -> None:
    _register_commands()
    app()
