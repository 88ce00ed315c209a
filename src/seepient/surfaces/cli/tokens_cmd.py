"""``seepient tokens create|list|revoke``: bearer tokens for the server, printed once and stored only as a hash,
optionally expiring."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Annotated, Any, TypeVar

import typer

from seepient.surfaces.cli.failure import fail

_T = TypeVar("_T")
_DURATION = re.compile(r"(\d+)([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DATABASE_HELP = "the server's database (default ~/.seepient/seepient.db)"


def parse_duration(text: str) -> timedelta:
    """``90m``, ``12h``, ``7d``, ``2w`` or a sum of them (``1d12h``); ``ValueError`` for anything else."""
    compact = text.strip().lower()
    parts = _DURATION.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise ValueError(f"{text!r} is not a duration: use a number and a unit, e.g. 90m, 12h, 7d, 2w")
    total = sum((timedelta(**{_UNITS[unit]: int(number)}) for number, unit in parts), timedelta())
    if total <= timedelta(0):
        raise ValueError("a token's lifetime must be positive")
    return total


def _with_store(database: str | None, use: Callable[[Any], Awaitable[_T]], command: str) -> _T:
    from seepient.config import SeepientPaths
    from seepient.store import Store, StoreError, database_url

    async def _run() -> _T:
        async with contextlib.aclosing(
            await Store.open(database_url(database, SeepientPaths.from_env().home))
        ) as store:
            return await use(store)

    try:
        return asyncio.run(_run())
    except (StoreError, ValueError) as exc:
        raise fail(str(exc), command=f"tokens {command}") from None


def register(app: typer.Typer) -> None:
    tokens = typer.Typer(help="Bearer tokens for `seepient serve`.", no_args_is_help=True)
    app.add_typer(tokens, name="tokens")

    @tokens.command("create")
    def create_command(
        principal: Annotated[str, typer.Option(help="who the token acts as; sessions belong to it")],
        expires: Annotated[
            str | None,
            typer.Option(help="lifetime, e.g. 12h, 7d, 2w (default: until revoked); expired tokens get 401"),
        ] = None,
        database: Annotated[str | None, typer.Option(help=_DATABASE_HELP)] = None,
    ) -> None:
        """Create a token and print it once on stdout; only its SHA-256 is stored."""
        try:
            lifetime = parse_duration(expires) if expires is not None else None
        except ValueError as exc:
            raise fail(f"--expires: {exc}", command="tokens create") from None
        issued = _with_store(
            database, lambda store: store.create_token(principal, expires_in=lifetime), "create"
        )
        typer.echo(issued.secret)
        until = f", expires in {expires}" if expires else ""
        typer.echo(
            f"token {issued.token_id} for principal {principal!r}{until}: shown once, keep it secret "
            "(the server keeps only its hash)",
            err=True,
        )

    @tokens.command("list")
    def list_command(
        database: Annotated[str | None, typer.Option(help=_DATABASE_HELP)] = None,
        json_output: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
    ) -> None:
        """List tokens (id, principal, created, expiry, state); a token's secret is never stored, so never shown."""
        found = _with_store(database, lambda store: store.list_tokens(), "list")
        if json_output:
            typer.echo(
                json.dumps(
                    [
                        {
                            "id": t.token_id,
                            "principal": t.principal,
                            "created_at": t.created_at.isoformat(),
                            "expires_at": t.expires_at.isoformat() if t.expires_at else None,
                            "revoked_at": t.revoked_at.isoformat() if t.revoked_at else None,
                            "state": t.state(),
                        }
                        for t in found
                    ]
                )
            )
            return
        if not found:
            typer.echo("no tokens: create one with `seepient tokens create --principal NAME`", err=True)
            return
        for t in found:
            expiry = f"expires {t.expires_at:%Y-%m-%d %H:%M} UTC" if t.expires_at else "no expiry"
            typer.echo(
                f"{t.token_id}  {t.state():8}  {t.principal}  created {t.created_at:%Y-%m-%d %H:%M} UTC  {expiry}"
            )

    @tokens.command("revoke")
    def revoke_command(
        token_id: Annotated[
            str, typer.Argument(metavar="ID", help="the token's id (`seepient tokens list`)")
        ],
        database: Annotated[str | None, typer.Option(help=_DATABASE_HELP)] = None,
    ) -> None:
        """Revoke a token: a running server refuses it within seconds (its cache holds a token for at most 5 s)."""
        if not _with_store(database, lambda store: store.revoke_token(token_id), "revoke"):
            raise fail(f"no active token {token_id!r} (`seepient tokens list`)", command="tokens revoke")
        typer.echo(f"revoked token {token_id}", err=True)
