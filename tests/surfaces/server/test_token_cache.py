"""The server's token cache over the real store: one database read per token per few seconds, never a cached
failure, and a token revoked in the store stops working once its entry is older than the cache's lifetime."""

from __future__ import annotations

import asyncio

from seepient.store import Store, database_url
from seepient.surfaces.server.auth import TokenCache


async def test_success_is_cached_briefly_failures_never_and_revocation_takes_effect(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = await Store.open(database_url(f"sqlite:///{tmp_path / 's.db'}", tmp_path))
    lookups: list[str] = []

    async def counted(secret: str) -> tuple[str, str] | None:
        lookups.append(secret)
        return await store.authenticate(secret)

    try:
        issued = await store.create_token("alice")
        cache = TokenCache(counted, ttl_s=0.3)
        results = await asyncio.gather(*(cache.authenticate(issued.secret) for _ in range(50)))
        assert set(results) == {(issued.token_id, "alice")}
        assert len(lookups) == 1  # fifty requests at once share one lookup
        before = len(lookups)
        for _ in range(20):
            assert await cache.authenticate(issued.secret) == (issued.token_id, "alice")
        assert len(lookups) == before  # served from the cache

        forged = issued.secret[:-4] + "0000"
        assert await cache.authenticate(forged) is None
        assert await cache.authenticate(forged) is None
        assert lookups.count(forged) == 2  # a failure is asked again every time, never remembered

        assert await store.revoke_token(issued.token_id)
        await asyncio.sleep(0.35)
        assert await cache.authenticate(issued.secret) is None
    finally:
        await store.aclose()
