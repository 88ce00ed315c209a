"""Fixtures for runtime tests: a real session (replay model, real policy, executor and audit log) in a temp
workspace, a scripted approver at the approval seam, and small tools that make concurrency observable."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

from seepient.config import SeepientPaths
from seepient.protocol import (
    ApprovedAction,
    PreparedActionDraft,
    ReadAction,
    RuntimeEvent,
)
from seepient.runtime import Session, SessionOptions
from seepient.tools.base import Tool, ToolContext, ToolOutput
from tests.audit_view import merge_actions
from tests.support.scripts import new_script


class _ProbeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str


class ProbeTool(Tool[_ProbeArgs]):
    """A read-only tool that records when each call starts and ends, and can wait on a shared barrier."""

    name: ClassVar[str] = "probe"
    description: ClassVar[str] = "test probe"
    input_model: ClassVar[type[BaseModel]] = _ProbeArgs
    read_only: ClassVar[bool] = True
    concurrency_safe: ClassVar[bool] = True

    def __init__(
        self, *, barrier: asyncio.Barrier | None = None, output: str | None = None, boom: bool = False
    ) -> None:
        self.log: list[str] = []
        self.barrier = barrier
        self.output = output
        self.boom = boom

    async def prepare(self, args: _ProbeArgs, ctx: ToolContext) -> PreparedActionDraft:
        return PreparedActionDraft(
            session_id=ctx.session_id,
            call_id=ctx.call_id,
            tool=self.name,
            kind="read",
            payload=ReadAction(operation="glob", paths=(str(ctx.workspace),), params={"label": args.label}),
            read_only=True,
            summary=f"probe {args.label}",
        )

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        label = action.payload.params["label"]  # type: ignore[union-attr]
        self.log.append(f"start {label}")
        if self.boom:
            raise RuntimeError("probe exploded")
        if self.barrier is not None:
            await asyncio.wait_for(self.barrier.wait(), timeout=5)
        await asyncio.sleep(0.01)
        self.log.append(f"end {label}")
        return ToolOutput(text=self.output or f"probed {label}")


class SerialProbe(ProbeTool):
    name: ClassVar[str] = "serial_probe"
    concurrency_safe: ClassVar[bool] = False


@pytest.fixture(name="make_session")
def make_session_fixture(tmp_path: Path) -> Callable[..., tuple[Session, list[RuntimeEvent]]]:
    """A real Session on the replay model (one script per call), workspace and Seepient home in tmp_path, and
    the list its events land in; modules outside tests/runtime import it to use it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "seepient-home"

    def make(turns: list[dict[str, Any]], **options: Any) -> tuple[Session, list[RuntimeEvent]]:
        script = new_script(tmp_path, turns)
        session = Session.open(
            SessionOptions(
                workspace=workspace, model=f"replay:{script}", paths=SeepientPaths(home=home), **options
            )
        )
        events: list[RuntimeEvent] = []
        session.subscribe(events.append)
        return session, events

    return make


def audit_lines(session: Session) -> list[dict[str, Any]]:
    """The log's records as written (an action that ran is an intent and an outcome)."""
    path = session.audit.path
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def audit_actions(session: Session) -> list[dict[str, Any]]:
    """One entry per action (intent and outcome merged, see ``tests/audit_view.py``)."""
    return merge_actions(audit_lines(session))
