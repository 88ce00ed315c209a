"""The web console's routes: its static files at ``/`` under a strict Content-Security-Policy, and the
``/v1`` routes only a page needs (the caller's own grants, a session's audit records with the chain's
verdict, model text rendered as sanitised HTML).

No ``from __future__ import annotations`` here: the routes are defined inside ``add_console_routes`` around
the caller dependency ``app.py`` hands in, and FastAPI must see those annotations as objects, not strings.
"""

import asyncio
import json
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI, HTTPException, Response
from pydantic import BaseModel, Field

from seepient.audit.signing import public_key_path
from seepient.audit.verify import verify_log
from seepient.protocol.fields import same_named
from seepient.surfaces.server.auth import Principal
from seepient.surfaces.server.config import MODE_ORDER
from seepient.surfaces.server.console_markdown import render_markdown

if TYPE_CHECKING:
    from seepient.surfaces.server.app import ServerState

#: Scripts and styles come from this origin only and no inline script runs; HTML reaches the DOM only
#: through the one Trusted Types policy the console makes for the server's sanitised markdown.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' blob:",
        "connect-src 'self'",
        "form-action 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types seepient-markdown",
    )
)
_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-cache",
}
_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css",
    ".js": "text/javascript",
    ".svg": "image/svg+xml",
}
_MAX_AUDIT_RECORDS = 2000
_MAX_RENDER_TEXTS = 200


class Grants(BaseModel):
    """What the caller may open sessions with: its roots, models and the consent modes up to its cap."""

    principal: str
    roots: list[str]
    models: list[str]
    max_mode: str | None
    modes: list[str] = Field(description="the consent modes allowed, from the most cautious")
    allow_replay: bool


_REPORTED = ("ok", "exists", "records", "head_seq", "first_bad_seq", "problem", "signature", "key_id")
"""The fields of ``AuditVerification`` taken from the verify report as they are."""


class AuditVerification(BaseModel):
    """The verdict on the whole hash chain the session's records are part of (``seepient audit verify``)."""

    ok: bool
    exists: bool
    records: int
    head_seq: int
    first_bad_seq: int | None
    problem: str | None
    signature: str
    key_id: str | None
    warnings: list[str]
    interrupted: int


class AuditView(BaseModel):
    session_id: str
    records: list[dict[str, Any]] = Field(
        description="this session's records (and its sub-agents'), oldest first"
    )
    truncated: bool = Field(description="older records were left out; the newest are kept")
    verification: AuditVerification


class RenderRequest(BaseModel):
    texts: list[str] = Field(..., max_length=_MAX_RENDER_TEXTS)


class Rendered(BaseModel):
    html: list[str] = Field(description="each text as sanitised HTML, in the order given")


def _console_files() -> dict[str, Path]:
    """URL path under ``/console/`` → file. The SDK's compiled client is in ``sdk/``: copied there by the
    wheel build (``force-include``), read from the checkout's ``clients/typescript/dist`` in a source tree."""
    base = Path(str(resources.files("seepient.surfaces.server") / "console"))
    files = {p.relative_to(base).as_posix(): p for p in base.rglob("*") if p.suffix in _MEDIA_TYPES}
    if not any(name.startswith("sdk/") for name in files):
        checkout = Path(__file__).resolve().parents[4] / "clients" / "typescript" / "dist"
        files.update({f"sdk/{p.name}": p for p in checkout.glob("*.js")})
    return files


def _console_response(path: Path) -> Response:
    return Response(path.read_bytes(), media_type=_MEDIA_TYPES[path.suffix], headers=_HEADERS)


def add_console_routes(app: FastAPI, state: "ServerState", principal_of: Any) -> None:
    """Mount the console on ``app``; ``principal_of`` is the bearer-token dependency of the ``/v1`` routes."""
    files = _console_files()
    caller_dependency = Depends(principal_of)

    @app.get("/", include_in_schema=False)
    async def console_index() -> Response:
        return _console_response(files["index.html"])

    @app.get("/console/{name:path}", include_in_schema=False)
    async def console_file(name: str) -> Response:
        # Only the files listed at start-up: a name never becomes a path on the host.
        path = files.get(name)
        if path is None:
            raise HTTPException(status_code=404, detail=f"no console file {name}")
        return _console_response(path)

    @app.get("/v1/me", response_model=Grants)
    async def my_grants(caller: Principal = caller_dependency) -> Grants:
        """The caller's own grants: the roots, models and modes a new session may use here."""
        grant = state.manager.config.grant_for(caller.name)
        if grant is None:
            return Grants(
                principal=caller.name, roots=[], models=[], max_mode=None, modes=[], allow_replay=False
            )
        return Grants(
            principal=caller.name,
            roots=[str(root) for root in grant.roots],
            models=list(grant.models),
            max_mode=grant.max_mode,
            modes=list(MODE_ORDER[: MODE_ORDER.index(grant.max_mode) + 1]),
            allow_replay=grant.allow_replay,
        )

    @app.get("/v1/sessions/{session_id}/audit", response_model=AuditView)
    async def session_audit(session_id: str, caller: Principal = caller_dependency) -> AuditView:
        """The session's audit records and whether the log they are chained in verifies."""
        if await state.store.get_session(session_id, caller.name) is None:
            raise HTTPException(status_code=404, detail=f"no session {session_id}")
        log = state.manager.paths.audit_log
        key = public_key_path(state.manager.paths.audit_signing_key)
        # Both read the whole log from disk: off the event loop.
        records, truncated = await asyncio.to_thread(_records_of, log, session_id, caller.name)
        report = await asyncio.to_thread(verify_log, log, public_key=key if key.exists() else None)
        return AuditView(
            session_id=session_id,
            records=records,
            truncated=truncated,
            verification=AuditVerification(
                **same_named(report, _REPORTED),
                warnings=list(report.warnings),
                interrupted=len(report.interrupted),
            ),
        )

    @app.post("/v1/render/markdown", response_model=Rendered)
    async def render(body: RenderRequest, caller: Principal = caller_dependency) -> Rendered:
        """Markdown as sanitised HTML for the console (raw HTML in the text stays text)."""
        # A megabyte of text takes a while to parse and highlight: off the event loop other sessions share.
        return Rendered(html=await asyncio.to_thread(lambda: [render_markdown(text) for text in body.texts]))


def _records_of(log: Path, session_id: str, principal: str) -> tuple[list[dict[str, Any]], bool]:
    kept: list[dict[str, Any]] = []
    truncated = False
    try:
        handle = log.open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], False
    with handle:
        for line in handle:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn tail; verification reports it
            if not isinstance(record, dict):
                continue
            ours = session_id in (record.get("session_id"), record.get("parent_session_id"))
            if ours and record.get("principal") in (None, principal):
                kept.append(record)
                if len(kept) > _MAX_AUDIT_RECORDS:
                    kept.pop(0)
                    truncated = True
    return kept, truncated
