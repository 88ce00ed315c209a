"""One turn of a CLI session run to its end: what ``seepient run`` and the demo share (Ctrl-C cancels the turn
cleanly; a planning turn whose plan is accepted is carried out in the same history)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seepient.surfaces.cli.run_sessions import RunRecorder


def drive_turn(
    session: object,
    prompt: str,
    images: tuple[object, ...] = (),
    approve_plan: Callable[[str], bool] | None = None,
    recorder: RunRecorder | None = None,
) -> object:
    """Run one turn; the first Ctrl-C cancels it, which ends the turn cleanly after the current action.

    With ``approve_plan`` the turn is a planning turn; when it ends with a plan and ``approve_plan`` accepts
    it, a second turn carries the plan out in the same history. With ``recorder`` the turns are stored."""
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
        if recorder is not None:
            await recorder.start(session)
        turn = asyncio.ensure_future(_turns())
        loop.add_signal_handler(signal.SIGINT, turn.cancel)
        try:
            return await turn
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            await session.aclose()
            if recorder is not None:
                await recorder.aclose()

    return asyncio.run(_main())
