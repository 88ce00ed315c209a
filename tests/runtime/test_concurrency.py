"""Concurrency of one model step's tool calls: safe calls (per input) run together under a bound, the others
one after another in order, and results reach the model in the order of the calls."""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from seepient.protocol import ApprovedAction, PreparedActionDraft, ReadAction, ToolResult
from seepient.tools.base import Tool, ToolContext, ToolOutput


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str
    delay: float = 0.0
    exclusive: bool = False


class _Gauge:
    """Counts calls running at the same moment, across tools.

    With ``together``, each call holds off its sleep until that many calls have been running at once (or 5 s
    passed), so a loaded machine that staggers the starts by more than the shortest delay cannot make calls that
    were allowed to overlap look serial.
    """

    def __init__(self, together: int = 0) -> None:
        self.running = 0
        self.peak = 0
        self.log: list[str] = []
        self.together = together
        self.gathered = asyncio.Event()

    async def hold_until_gathered(self) -> None:
        if self.peak >= self.together:
            self.gathered.set()
        if self.together:
            try:
                await asyncio.wait_for(self.gathered.wait(), 5.0)
            except TimeoutError:
                pass


class TimedTool(Tool[_Args]):
    """A read-only tool that sleeps ``delay`` and records starts and ends; safe unless ``exclusive``."""

    name: ClassVar[str] = "timed"
    description: ClassVar[str] = "test tool"
    input_model: ClassVar[type[BaseModel]] = _Args
    read_only: ClassVar[bool] = True
    concurrency_safe: ClassVar[bool] = True

    def __init__(self, gauge: _Gauge) -> None:
        self.gauge = gauge

    def is_concurrency_safe(self, args: _Args) -> bool:
        return not args.exclusive

    async def prepare(self, args: _Args, ctx: ToolContext) -> PreparedActionDraft:
        return PreparedActionDraft(
            session_id=ctx.session_id,
            call_id=ctx.call_id,
            tool=self.name,
            kind="read",
            payload=ReadAction(operation="glob", paths=(str(ctx.workspace),), params=args.model_dump()),
            read_only=True,
            summary=f"timed {args.label}",
        )

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        params = action.payload.params  # type: ignore[union-attr]
        gauge = self.gauge
        gauge.running += 1
        gauge.peak = max(gauge.peak, gauge.running)
        gauge.log.append(f"start {params['label']}")
        try:
            await gauge.hold_until_gathered()
            await asyncio.sleep(params["delay"])
        finally:
            gauge.running -= 1
            gauge.log.append(f"end {params['label']}")
        return ToolOutput(text=f"done {params['label']}")


def _step(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": "timed", "arguments": a} for a in calls]}


def _tool_messages(session: Any) -> list[str]:
    return [m.content for m in session.history if m.role == "tool"]


async def test_parallel_calls_finish_out_of_order_but_results_keep_the_call_order(make_session):
    gauge = _Gauge(together=4)
    delays = [0.3, 0.05, 0.2, 0.0]
    session, events = make_session(
        [_step(*({"label": str(i), "delay": d} for i, d in enumerate(delays))), {"text": "ok"}],
        extra_tools=[TimedTool(gauge)],
    )
    await session.run("x")
    ends = [entry.split()[1] for entry in gauge.log if entry.startswith("end")]
    assert ends == ["3", "1", "2", "0"]  # they really ran together, and finished out of order
    assert gauge.peak == 4
    assert _tool_messages(session) == ["done 0", "done 1", "done 2", "done 3"]
    call_ids = [c.id for m in session.history if m.role == "assistant" for c in m.tool_calls]
    assert [m.tool_call_id for m in session.history if m.role == "tool"] == call_ids


async def test_a_call_unsafe_for_its_input_runs_alone_between_the_safe_ones(make_session):
    gauge = _Gauge()
    session, events = make_session(
        [
            _step(
                {"label": "a", "delay": 0.1},
                {"label": "b", "delay": 0.1},
                {"label": "x", "delay": 0.05, "exclusive": True},
                {"label": "c", "delay": 0.1},
                {"label": "d", "delay": 0.0},
            ),
            {"text": "ok"},
        ],
        extra_tools=[TimedTool(gauge)],
    )
    await session.run("x")
    log = gauge.log
    # x starts only after a and b ended, and c, d start only after x ended.
    assert log.index("start x") > max(log.index("end a"), log.index("end b"))
    assert log.index("end x") < min(log.index("start c"), log.index("start d"))
    assert log.index("start x") + 1 == log.index("end x")
    assert _tool_messages(session) == ["done a", "done b", "done x", "done c", "done d"]


async def test_the_default_bound_holds_eleven_calls_run_at_most_ten_at_once(make_session):
    gauge = _Gauge(together=10)
    session, events = make_session(
        [_step(*({"label": str(i), "delay": 0.15} for i in range(11))), {"text": "ok"}],
        extra_tools=[TimedTool(gauge)],
    )
    await session.run("x")
    assert gauge.peak == 10
    first_end = next(i for i, entry in enumerate(gauge.log) if entry.startswith("end"))
    assert gauge.log.index("start 10") > first_end  # the eleventh waited for a slot
    assert len([e for e in events if isinstance(e, ToolResult) and e.status == "ok"]) == 11


async def test_a_smaller_configured_bound_is_respected(make_session, tmp_path):
    home = tmp_path / "seepient-home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"runtime": {"maxParallelTools": 3}}))
    gauge = _Gauge(together=3)
    session, _ = make_session(
        [_step(*({"label": str(i), "delay": 0.05} for i in range(7))), {"text": "ok"}],
        extra_tools=[TimedTool(gauge)],
    )
    await session.run("x")
    assert gauge.peak == 3
    assert _tool_messages(session) == [f"done {i}" for i in range(7)]


async def test_calls_whose_arguments_do_not_validate_run_alone_and_report_the_error(make_session):
    gauge = _Gauge()
    session, events = make_session(
        [_step({"label": "a", "delay": 0.05}, {"bogus": 1}, {"label": "b", "delay": 0.05}), {"text": "ok"}],
        extra_tools=[TimedTool(gauge)],
    )
    await session.run("x")
    statuses = [e.status for e in events if isinstance(e, ToolResult)]
    assert sorted(statuses) == ["error", "ok", "ok"]
    assert gauge.log == ["start a", "end a", "start b", "end b"]
