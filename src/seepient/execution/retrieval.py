"""Look-ups the executor runs for read-only tools: the knowledge index (through the reader the runtime hands
in: opened read-only, its vectors ranked with the local model that made them, loaded offline, else BM25 alone)
and web search through the SSRF-safe client with the backend's key taken from the environment at the last
moment."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from seepient.config.paths import SeepientPaths
from seepient.net.address_policy import AddressPolicy
from seepient.net.fetch import Resolver, SafeFetcher
from seepient.net.web_search import SearchRefused, search
from seepient.protocol.actions import KnowledgeQuery, WebSearchRequest
from seepient.protocol.refusals import FetchRefused
from seepient.protocol.retrieval import (
    KnowledgeIndexReader,
    KnowledgeOutcome,
    WebSearchFailed,
    WebSearchOutcome,
)


async def knowledge_search(
    seepient_home: Path, workspace: Path, query: KnowledgeQuery, reader: KnowledgeIndexReader
) -> KnowledgeOutcome:
    # The model is named by the index, which only `seepient knowledge index` writes (under Seepient's own,
    # self-protected home), never by the workspace; loading it can take seconds, hence the thread.
    index = SeepientPaths(home=seepient_home).knowledge_index(workspace)
    return await asyncio.to_thread(reader, index, query.query, limit=query.limit)


async def web_search(
    request: WebSearchRequest,
    *,
    policy: AddressPolicy,
    resolver: Resolver | None,
    environ: Mapping[str, str],
) -> WebSearchOutcome:
    key = None
    if request.api_key_env:
        key = environ.get(request.api_key_env) or None
        if key is None:
            raise WebSearchFailed(
                f"webSearch.apiKeyEnv names ${request.api_key_env}, which is not set in Seepient's environment; "
                "export it and start the session again"
            )
    # A request carrying a key is never redirected: the key would follow to wherever the backend points.
    redirects = 0 if key else 3
    async with SafeFetcher(policy, resolver=resolver, max_redirects=redirects, deadline_s=30.0) as fetcher:
        try:
            return await search(fetcher, request, key=key)
        except SearchRefused as exc:
            raise FetchRefused(str(exc)) from None
