"""``seepient demo``: copies a small project with a failing test into a temporary folder and lets a scripted
model fix it through the real pipeline (policy, approval, sandbox, exact commit, audit), offline."""

from __future__ import annotations

import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

from seepient.surfaces.cli import exit_codes

_PROMPT = "The tests in this project fail. Find the bug and fix it, then run the tests."


def _copy_bundle(target: Path) -> Path:
    bundle = resources.files("seepient.surfaces.cli") / "demo_bundle"
    with resources.as_file(bundle) as src:
        shutil.copytree(Path(src) / "project", target, dirs_exist_ok=True)
        script = target.parent / f"{target.name}-script.yaml"
        shutil.copyfile(Path(src) / "script.yaml", script)
    return script


def run_demo(*, yes: bool, json_output: bool) -> int:
    from seepient.approval.terminal import TerminalApprover
    from seepient.audit.report_text import format_report
    from seepient.audit.verify import verify_log
    from seepient.protocol import ToolResult
    from seepient.surfaces.cli.options import open_session
    from seepient.surfaces.cli.render import HumanRenderer, JsonRenderer
    from seepient.surfaces.cli.turn import drive_turn

    err = sys.stderr
    root = Path(tempfile.mkdtemp(prefix="seepient-demo-"))
    workspace = root / "project"
    script = _copy_bundle(workspace)
    interactive = sys.stdin.isatty() and not yes
    err.write(f"Seepient demo: a scripted model fixes a failing test in {workspace}\n")
    if not interactive:
        err.write(
            "Approving the demo's own actions automatically ("
            + ("--yes" if yes else "no terminal on stdin")
            + "); policy denials still apply.\n"
        )
    err.write(f"Prompt: {_PROMPT}\n\n")
    session = open_session(
        workspace=workspace,
        model=f"replay:{script}",
        approver=TerminalApprover(out=err) if interactive else None,
        auto_approve=not interactive,
    )
    results: list[ToolResult] = []
    session.subscribe(lambda e: results.append(e) if isinstance(e, ToolResult) else None)
    session.subscribe(JsonRenderer() if json_output else HumanRenderer())
    outcome = drive_turn(session, _PROMPT)

    shell_results = [r for r in results if r.tool == "shell"]
    tests_passed = (
        bool(shell_results)
        and shell_results[-1].status == "ok"
        and shell_results[-1].data.get("exit_code") == 0
    )
    report = verify_log(session.audit.path)
    err.write("\n— What happened —\n")
    for r in results:
        err.write(f"  {r.tool:<10} {r.status:<8} {r.output.splitlines()[0] if r.output else ''}\n")
    err.write(f"  tests in the sandbox: {'passed' if tests_passed else 'FAILED or not run'}\n")
    err.write(f"  {format_report(report)}\n")
    err.write(f"  workspace: {workspace}\n")
    if outcome.reason == "interrupted":
        return exit_codes.INTERRUPTED
    return exit_codes.OK if outcome.reason == "final" and tests_passed and report.ok else exit_codes.FAILED
