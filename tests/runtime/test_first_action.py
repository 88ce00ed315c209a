"""The warm-up a session starts when it opens: its tasks run in a thread, in order, a failing one skipped; the
session's first call waits for all of it; and it makes nothing a session that never acts would not."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from seepient.config import SeepientPaths
from seepient.runtime import Session, SessionOptions
from seepient.runtime.first_action import FirstActionWarmup
from tests.runtime.conftest import ProbeTool, audit_actions
from tests.support.scripts import new_script


def _call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def test_tasks_run_in_order_in_another_thread_past_a_failing_one():
    ran: list[tuple[str, int]] = []

    def fails() -> None:
        ran.append(("fails", threading.get_ident()))
        raise RuntimeError("cannot read it now")

    warmup = FirstActionWarmup([fails, lambda: ran.append(("second", threading.get_ident()))])
    warmup.start()
    await warmup.wait()
    assert [name for name, _ in ran] == ["fails", "second"]
    assert {ident for _, ident in ran} != {threading.get_ident()}
    await warmup.wait()  # done: returns at once, and a second start runs nothing again
    warmup.start()
    await warmup.wait()
    assert len(ran) == 2


async def test_waiting_for_a_warmup_never_started_returns():
    await FirstActionWarmup([lambda: None]).wait()
    await FirstActionWarmup([]).wait()


async def test_the_first_call_waits_for_the_warmup(make_session):
    order: list[str] = []
    release = threading.Event()

    class _LoggedProbe(ProbeTool):
        async def prepare(self, args, ctx):  # type: ignore[override]
            order.append("prepare")
            return await super().prepare(args, ctx)

    probe = _LoggedProbe()
    session, _ = make_session([_call("probe", label="a"), {"text": "ok"}], extra_tools=[probe])

    def slow_task() -> None:
        release.wait(10)
        order.append("warm-up done")

    session._parts.deps.first_action = warmup = FirstActionWarmup([slow_task])
    warmup.start()
    running = asyncio.ensure_future(session.run("x"))
    for _ in range(50):  # let the turn reach the call: it must be stopped before preparing it
        await asyncio.sleep(0.01)
    assert order == [] and not running.done()
    release.set()
    outcome = await running
    assert outcome.text == "ok"
    assert order == ["warm-up done", "prepare"] and probe.log == ["start a", "end a"]
    assert len(audit_actions(session)) == 1
    await session.aclose()


async def test_a_session_that_never_acts_creates_no_signing_key(tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    session = Session.open(
        SessionOptions(
            workspace=workspace,
            model=f"replay:{new_script(tmp_path, [{'text': 'hi'}])}",
            paths=SeepientPaths(home=home),
        )
    )
    await session.run("hello")
    first_action = session._parts.deps.first_action
    assert first_action is not None
    await first_action.wait()
    await session.aclose()
    assert not list(home.rglob("*.key")) and not list(home.rglob("*.pub"))
