"""``seepient tokens create``: issue a bearer token for the server, printed once and stored only as a hash."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from seepient.surfaces.cli import exit_codes


def register(app: typer.Typer) -> None:
    tokens = typer.Typer(help="Bearer tokens for `seepient serve`.", no_args_is_help=True)
    app.add_typer(tokens, name="tokens")

    @tokens.command("create")
    def create_command(
        principal: Annotated[str, typer.Option(help="who the token acts as; sessions belong to it")],
        database: Annotated[
            str | None, typer.Option(help="the server's database (default ~/.seepient/seepient.db)")
        ] = None,
    ) -> None:
        """Create a token and print it once on stdout; only its SHA-256 is stored."""
        from seepient.config import SeepientPaths
        from seepient.store import Store, StoreError, database_url

        async def issue() -> str:
            store = await Store.open(database_url(database, SeepientPaths.from_env().home))
            try:
                return (await store.create_token(principal)).secret
            finally:
                await store.aclose()

        try:
            secret = asyncio.run(issue())
        except (StoreError, ValueError) as exc:
            typer.echo(f"seepient tokens create: {exc}", err=True)
            raise typer.Exit(exit_codes.USAGE) from None
        typer.echo(secret)
        typer.echo(
            f"token for principal {principal!r}: shown once, keep it secret (the server keeps only its hash)",
            err=True,
        )
