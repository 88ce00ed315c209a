"""External path-traversal and dangerous-command corpora run through the guard and the engine."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from seepient.policy import PathGuard
from seepient.protocol import Decision, PathDenied


def _traversal_payloads(corpus) -> list[str]:
    directory = corpus("path_traversal")
    lines: list[str] = []
    for path in sorted(directory.glob("patt_*.txt")):
        for raw in path.read_bytes().split(b"\n"):
            lines.append(raw.rstrip(b"\r").decode("utf-8", "surrogateescape"))
    for raw in corpus("path_traversal", "patt_readme_traversal_cases.jsonl").read_text().splitlines():
        lines.append(json.loads(raw)["payload"])
    return lines


def test_traversal_corpus_never_escapes(layout, actions, corpus) -> None:
    """Every payload is refused or resolves inside the workspace when written; when read, it is refused,
    inside, or outside and then never a sensitive location, and the engine asks before such a read."""
    payloads = _traversal_payloads(corpus)
    assert len(payloads) > 28_000
    guard = layout.guard()
    engine = layout.engine("ask-untrusted")
    counts: Counter[str] = Counter()
    outside_reads: set[str] = set()
    for payload in payloads:
        try:
            resolved = guard.for_write(payload)
        except PathDenied as denied:
            counts[f"write refused ({denied.rule})"] += 1
        else:
            assert resolved.relative is not None, payload
            assert Path(resolved.absolute).is_relative_to(layout.workspace)
            counts["write inside"] += 1
        try:
            resolved = guard.for_read(payload)
        except PathDenied as denied:
            counts[f"read refused ({denied.rule})"] += 1
        else:
            if resolved.relative is not None:
                counts["read inside"] += 1
            else:
                counts["read outside, asks"] += 1
                outside_reads.add(resolved.absolute)
    for absolute in outside_reads:
        verdict = engine.evaluate(actions.read(absolute))
        assert verdict.decision is Decision.ASK, (absolute, verdict)
    print("\ntraversal corpus:", dict(sorted(counts.items())))
    assert counts["write inside"] + sum(v for k, v in counts.items() if k.startswith("write refused")) == len(
        payloads
    )
    assert counts["read refused (path_guard:sensitive)"] > 0  # /etc/shadow and friends


def _mcp_cases(corpus) -> list[dict]:
    cases = []
    for raw in (
        corpus("path_traversal", "mcp_filesystem_path_within_allowed_cases.jsonl").read_text().splitlines()
    ):
        case = json.loads(raw)
        path, allowed = case["path"], case["allowed_dirs"]
        # Where the case applies: POSIX string paths, absolute string allowed directories.
        if not isinstance(path, str) or not isinstance(allowed, list) or not allowed:
            continue
        if any(not isinstance(d, str) for d in allowed) or any(
            "\\" in p or ":" in p for p in [path, *allowed]
        ):
            continue
        allowed = [d for d in allowed if d]
        if any(not d.startswith("/") or "\x00" in d for d in allowed) or (path and not path.startswith("/")):
            continue
        cases.append(case | {"allowed_dirs": allowed})
    return cases


def test_mcp_filesystem_containment_cases(tmp_path: Path, corpus) -> None:
    """The MCP filesystem server's containment cases, each allowed directory made real under a temporary root."""
    cases = _mcp_cases(corpus)
    assert len(cases) > 80
    checked = 0
    for index, case in enumerate(cases):
        root = tmp_path / f"case{index}"
        guards = []
        for allowed in case["allowed_dirs"]:
            directory = Path(os.path.normpath(f"{root}/{allowed}"))
            directory.mkdir(parents=True, exist_ok=True)
            guards.append(PathGuard(directory, seepient_home=root / "sh", home=root / "nohome"))
        path = case["path"]
        mapped = f"{root}{path}" if path else ""
        oversized = len(mapped.encode()) > 4096
        admitted = False
        for guard in guards:
            try:
                resolved = guard.for_write(mapped)
            except PathDenied:
                continue
            assert resolved.relative is not None
            admitted = True
        if oversized:
            # Deliberate divergence: paths longer than PATH_MAX are refused even when they would land inside.
            assert not admitted, case["test"]
        else:
            assert admitted is case["expected"], (case["test"], path, case["allowed_dirs"])
        checked += 1
    assert checked == len(cases)


@pytest.mark.parametrize("mode", ["ask-untrusted", "always-ask"])
def test_dangerous_command_corpus_is_never_allowed(layout, actions, corpus, mode: str) -> None:
    engine = layout.engine(mode)
    for raw in corpus("shell_safety", "misc_agent_dangerous_command_cases.jsonl").read_text().splitlines():
        case = json.loads(raw)
        verdict = engine.evaluate(actions.shell(case["command"]))
        if case["expected_dangerous"]:
            assert verdict.decision is not Decision.ALLOW, (case["command"], verdict)
        elif case["command"] in ("ls -la", 'echo "Hello World"') and mode == "ask-untrusted":
            assert verdict.decision is Decision.ALLOW, (case["command"], verdict)
