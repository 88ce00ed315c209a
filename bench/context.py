"""Benchmarks for context assembly, each figure beside a raw baseline measured in the same run.

- assembling the system prompt for a git repository with 50 nested AGENTS.md files (the working directory
  at the bottom) and 200 skills, against just reading the same 250 files;
- the same assembly without running ``git status`` (branch from .git files only), to show what the
  git process costs (it runs in the read-only jail, as a session runs it);
- offline token estimation of a 1 MB history, against ``len()`` of the same strings (throughput).

Assembly must stay under 50 ms (median).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from bench._timing import median_ms, report, sample
from seepient.context.prompt import assemble_prompt
from seepient.context.tokens import TokenEstimator
from seepient.execution.local import LocalExecutor
from seepient.protocol import Message, ToolCall

RULE_FILES = 50
SKILLS = 200
BUDGET_MS = 50.0


def _build(root: Path) -> tuple[Path, Path, list[Path]]:
    repo = root / "repo"
    home = root / "seepient-home"
    files: list[Path] = []
    directory = repo
    for depth in range(RULE_FILES):
        directory.mkdir(parents=True, exist_ok=True)
        rule = directory / "AGENTS.md"
        rule.write_text(f"# Level {depth}\n" + f"- rule {depth}: keep functions short and tested.\n" * 20)
        files.append(rule)
        if depth < RULE_FILES - 1:
            directory = directory / f"d{depth}"
    workspace = directory
    for number in range(SKILLS):
        base = (workspace / ".agents" / "skills") if number % 4 else (home / "skills")
        skill = base / f"skill-{number:03d}" / "SKILL.md"
        skill.parent.mkdir(parents=True, exist_ok=True)
        skill.write_text(
            f"---\nname: skill-{number:03d}\ndescription: Handle task {number} for component {number % 17}, "
            "including migrations, release notes and reports.\nlicense: MIT\n---\n"
            + f"Step {number}: do the thing carefully.\n"
            * 30
        )
        files.append(skill)
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    else:
        (repo / ".git").mkdir()
        (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return workspace, home, files


def _assembly(root: Path, runs: int, *, git: bool) -> tuple[str, float]:
    workspace, home, files = _build(root)
    environ = dict(os.environ)
    # git runs only in the jail, with the repository read-only; without one the branch comes from .git alone.
    jail = LocalExecutor(workspace, seepient_home=home).read_only_jail if git else None

    def ours() -> None:
        assembled = assemble_prompt(workspace, seepient_home=home, environ=environ, git_jail=jail)
        assert len(assembled.rules.files) == RULE_FILES and len(assembled.skills) == SKILLS, (
            assembled.warnings
        )

    def raw() -> None:
        for path in files:
            with open(path, "rb") as handle:
                handle.read()

    ours_s = sample(ours, runs=runs)
    raw_s = sample(raw, runs=runs)
    name = f"assembly, {RULE_FILES}+{SKILLS} files" + ("" if git else ", no git")
    line = report(name, ours_s, raw_s, "read the same files", f"under {BUDGET_MS:.0f} ms")
    return line, median_ms(ours_s)


def _estimation(runs: int) -> str:
    history: list[Message] = []
    for number in range(400):
        call = ToolCall(id=f"c{number}", name="read_file", arguments={"path": f"src/module_{number}.py"})
        history.append(Message.assistant(f"Reading module {number}.", tool_calls=(call,)))
        history.append(
            Message.tool_result(call, f"def function_{number}(x):\n    return x * {number}\n" * 60)
        )
    size = sum(len(m.content) for m in history)

    def ours() -> None:
        TokenEstimator().messages(history)  # a fresh estimator: no cached counts

    def raw() -> None:
        sum(len(m.content) for m in history)

    ours_s = sample(ours, runs=runs)
    raw_s = sample(raw, runs=runs)
    throughput = size / (median_ms(ours_s) / 1000) / 1e6
    return report(
        f"token estimate, {size / 1e6:.1f} MB history",
        ours_s,
        raw_s,
        "len() of the same strings",
        f"none ({throughput:,.0f} MB/s)",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40, help="samples per figure (default 40)")
    args = parser.parse_args()
    lines = []
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="seepient-bench-context-") as tmp:
        root = Path(tmp)
        for git in (True, False):
            line, median = _assembly(root / str(git), args.runs, git=git)
            lines.append(line)
            worst = max(worst, median)
        lines.append(_estimation(args.runs))
    print(f"Seepient context benchmarks ({args.runs} runs each; medians; ratio = ours / raw baseline)")
    for line in lines:
        print(line)
    # Said, not exited on: bench/run goes on to the other benchmarks whatever one of them measured.
    verdict = "OK" if worst < BUDGET_MS else "OVER BUDGET"
    print(f"assembly budget: slowest median {worst:.1f} ms against {BUDGET_MS:.0f} ms: {verdict}")


if __name__ == "__main__":
    main()
