"""``diagnose``: each check against the real thing (bubblewrap, Docker, real MCP servers, a real audit log, the
trust store), each problem with its fix, keys never shown, a project's MCP server never started by looking."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from seepient.config import SeepientPaths
from seepient.config.settings import inspect_project
from seepient.config.trust import TrustStore
from seepient.runtime.doctor import DoctorOptions, DoctorReport, diagnose
from tests.conftest import BIN

SECRET = "sk-doctor-secret-value-4242"
TIME = {"command": str(BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]}


def _world(tmp_path: Path, user: dict[str, Any] | None = None) -> tuple[Path, SeepientPaths]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    paths = SeepientPaths(home=tmp_path / "seepient-home")
    paths.home.mkdir(exist_ok=True)
    if user is not None:
        paths.user_settings.write_text(json.dumps(user))
    return workspace, paths


async def _diagnose(tmp_path: Path, env: dict[str, str] | None = None, **options: Any) -> DoctorReport:
    workspace, paths = _world(tmp_path)
    environ = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **(env or {})}
    return await diagnose(DoctorOptions(workspace=workspace, paths=paths, environ=environ, **options))


def _lines(report: DoctorReport, area: str) -> list[tuple[str, str, str]]:
    return [(f.status, f.detail, f.fix) for f in report.findings if f.area == area]


async def test_a_healthy_workspace_has_no_problem_and_never_shows_a_key(tmp_path):
    _world(tmp_path, {"models": {"default": "openai:gpt-4.1"}})
    report = await _diagnose(tmp_path, {"OPENAI_API_KEY": SECRET})
    assert report.ok, report.problems
    assert any(
        status == "ok" and detail.startswith("bubblewrap starts")
        for status, detail, _ in _lines(report, "sandbox")
    )
    assert any("runs in the jail" in detail for _, detail, _ in _lines(report, "sandbox"))
    (openai,) = _lines(report, "models")
    assert openai[0] == "ok" and "$OPENAI_API_KEY" in openai[1] and "text.standard" in openai[1]
    assert SECRET not in json.dumps(report.as_dict())


async def test_a_missing_key_for_the_default_model_is_a_problem_with_its_fix(tmp_path):
    _world(tmp_path, {"models": {"default": "anthropic:claude-sonnet-4-5"}})
    report = await _diagnose(tmp_path)
    assert not report.ok
    (status, detail, fix) = _lines(report, "models")[0]
    assert status == "problem" and "$ANTHROPIC_API_KEY is not set" in detail
    assert fix.startswith("export ANTHROPIC_API_KEY=")


async def test_a_broken_settings_file_is_named(tmp_path):
    workspace, paths = _world(tmp_path)
    paths.user_settings.write_text('{"models": {"default": ')
    report = await _diagnose(tmp_path)
    problems = [f for f in report.problems if f.area == "settings"]
    assert problems and str(paths.user_settings) in problems[0].detail and problems[0].fix


async def test_mcp_servers_that_start_and_fail_and_a_projects_that_is_never_started(tmp_path):
    workspace, paths = _world(
        tmp_path,
        {"mcpServers": {"time": TIME, "broken": {"command": "/bin/sh", "args": ["-c", "exit 4"]}}},
    )
    planted = tmp_path / "project-server-ran"
    project = workspace / ".seepient" / "settings.json"
    project.parent.mkdir()
    server = {"command": "/bin/sh", "args": ["-c", f"touch {planted}"]}
    project.write_text(json.dumps({"mcpServers": {"planted": server}}))
    untrusted = await _diagnose(tmp_path)
    (trust,) = _lines(untrusted, "trust")
    assert trust[0] == "warning" and "seepient trust" in trust[2]
    (note,) = [line for line in _lines(untrusted, "mcp") if "planted" in line[1]]
    assert note[0] == "info" and "not configured" in note[1] and not planted.exists()
    # Trusted, the project's server is configured, yet looking at it must not start it: it needs consent.
    TrustStore(paths.trust_store).trust(workspace, inspect_project(workspace, paths=paths).file.sha256)
    report = await _diagnose(tmp_path)
    assert _lines(report, "trust")[0][0] == "ok"
    mcp = {detail.split(":")[0]: (status, detail, fix) for status, detail, fix in _lines(report, "mcp")}
    assert mcp["MCP server time"][0] == "ok" and "mcp__time__get_current_time" in mcp["MCP server time"][1]
    broken = [line for line in _lines(report, "mcp") if "broken" in line[1]]
    assert broken[0][0] == "problem" and "mcpServers.broken" in broken[0][2]
    planted_line = [line for line in _lines(report, "mcp") if "planted" in line[1]]
    assert planted_line[0][0] == "info" and "enabledProjectMcpServers" in planted_line[0][2]
    assert not planted.exists()
    assert not report.ok  # the broken server


async def test_a_tampered_audit_log_is_a_problem(tmp_path):
    workspace, paths = _world(tmp_path)
    from seepient.runtime import Session, SessionOptions
    from tests.support.scripts import write_script

    script = write_script(
        tmp_path / "s.yaml",
        [{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]}, {"text": "ok"}],
    )
    session = Session.open(SessionOptions(workspace=workspace, model=f"replay:{script}", paths=paths))
    await session.run("look")
    await session.aclose()
    intact = await _diagnose(tmp_path)
    assert _lines(intact, "audit")[0][0] == "ok" and "records" in _lines(intact, "audit")[0][1]
    text = paths.audit_log.read_text()
    paths.audit_log.write_text(text.replace('"glob"', '"grep"', 1))
    report = await _diagnose(tmp_path)
    (status, detail, fix) = _lines(report, "audit")[0]
    assert status == "problem" and "does not verify" in detail and "audit verify" in fix


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a folder's owner needs root")
async def test_worker_mode_as_root_wants_leased_workspaces_of_an_unprivileged_account(tmp_path):
    leased = tmp_path / "tenant-root"
    leased.mkdir()
    os.chown(leased, 0, 0)
    report = await _diagnose(tmp_path, leased_roots=[leased], euid=0, mcp=False)
    (status, detail, fix) = [line for line in _lines(report, "worker") if str(leased) in line[1]][0]
    assert status == "problem" and "belongs to root" in detail and f"chown -R 10001:10001 {leased}" in fix
    os.chown(leased, 10001, 10001)
    os.chown(tmp_path / "ws", 10001, 10001)
    fixed = await _diagnose(tmp_path, leased_roots=[leased], euid=0, mcp=False)
    assert [status for status, _, _ in _lines(fixed, "worker")] == ["ok", "ok"]
    assert all("uid 10001" in detail for _, detail, _ in _lines(fixed, "worker"))
    # Not root, and not in worker mode: nothing about leases is said.
    assert _lines(await _diagnose(tmp_path, euid=1000, mcp=False), "worker") == []


async def test_the_worker_image_matters_only_in_worker_mode(tmp_path):
    image = "seepient/no-such-image:never"
    _world(tmp_path, {"execution": {"workerImage": image}})
    local = await _diagnose(tmp_path, mcp=False)
    (line,) = [line for line in _lines(local, "docker") if image in line[1]]
    assert line[0] == "info" and local.ok
    config = tmp_path / "worker.json"
    config.write_text(json.dumps({"execution": {"backend": "docker-worker", "workerImage": image}}))
    worker = await _diagnose(tmp_path, config_file=config, mcp=False)
    (line,) = [line for line in _lines(worker, "docker") if image in line[1]]
    assert line[0] == "problem" and not worker.ok
    assert "seepient worker build-image" in line[2] or "Docker" in line[2]  # no image, or no engine at all
