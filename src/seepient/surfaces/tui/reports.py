"""What the TUI's ``/mcp`` and ``/doctor`` show, as ``(text, style)`` notices, and the custom commands a
session loads (a project's only once it is trusted). The checks themselves are the runtime's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from seepient.runtime.custom_commands import load_custom_commands, session_paths

if TYPE_CHECKING:
    from seepient.runtime import Session, SessionOptions

_STYLES = {"ok": "", "info": "", "warning": "yellow", "problem": "red"}


async def mcp_notices(session: Session) -> AsyncIterator[tuple[str, str]]:
    """Each server with its tools or why it is not running; servers not yet started start now (a project's
    asks first, as at a turn's start)."""
    from seepient.runtime.doctor import mcp_summary

    if not session.mcp.configured:
        yield "no MCP servers are configured (mcpServers in your settings)", ""
        return
    yield "starting the MCP servers…", ""
    await session.start_mcp()
    for status, detail, fix in mcp_summary(session):
        yield detail + (f"\n  fix: {fix}" if fix else ""), _STYLES[status]


async def doctor_notices(session: Session, options: SessionOptions) -> AsyncIterator[tuple[str, str]]:
    from seepient.runtime.doctor import DoctorOptions, diagnose

    yield "checking…", ""
    report = await diagnose(
        DoctorOptions(
            workspace=session.workspace,
            paths=session_paths(options),
            environ=options.environ,
            config_file=options.config_file,
            session=session,
        )
    )
    yield "\n".join(report.lines()), "" if report.ok else "yellow"


__all__ = ["doctor_notices", "load_custom_commands", "mcp_notices", "session_paths"]
