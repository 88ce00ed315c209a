"""``web_search``: search the web through the backend configured in the settings (SearXNG, Brave Search or
Tavily) and give the model title, URL and snippet per result. The request goes through the SSRF-safe client;
the Fetch rules apply to the backend's host; the API key is added by the executor and never shown."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from seepient.config.sections import WebSearchSettings
from seepient.net.url import UrlError, parse_url
from seepient.net.web_search import endpoint
from seepient.protocol import ApprovedAction, FetchRefused, PreparedActionDraft
from seepient.protocol.actions import WebSearchRequest
from seepient.protocol.retrieval import WebSearchFailed, WebSearchOutcome
from seepient.tools.base import Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import execute_as, expect_payload

NOT_CONFIGURED = (
    "web_search has no backend configured. The user can add one to ~/.seepient/settings.json, e.g. "
    '{"webSearch": {"backend": "searxng", "url": "https://searx.example.org"}} or '
    '{"webSearch": {"backend": "brave", "apiKeyEnv": "BRAVE_API_KEY"}} (also "tavily"). Meanwhile, use '
    "web_fetch on a URL you know."
)


class WebSearchInput(ToolInput):
    query: str = Field(min_length=1, max_length=400)
    """What to search the web for."""
    limit: int = Field(default=5, ge=1, le=20)
    """How many results to return (default 5)."""


class WebSearchTool(Tool[WebSearchInput], read_only=True, concurrency_safe=True):
    """Search the web and get results as title, URL and snippet. Use web_fetch to read a result in full.
    Search terms leave this machine for the configured search service."""

    name: ClassVar[str] = "web_search"

    def __init__(self, settings: WebSearchSettings | None = None) -> None:
        self._settings = settings

    def bind(self, settings: WebSearchSettings | None) -> None:
        """Use the session's ``webSearch`` settings (None: not configured)."""
        self._settings = settings

    async def prepare(self, args: WebSearchInput, ctx: ToolContext) -> PreparedActionDraft:
        settings = self._settings
        if settings is None or settings.backend is None:
            raise ToolInputError(NOT_CONFIGURED)
        try:
            url = parse_url(endpoint(settings.backend, settings.url)).geturl()
        except (ValueError, UrlError) as exc:
            raise ToolInputError(f"web_search is misconfigured: webSearch.url: {exc}") from None
        query = " ".join(args.query.split())
        payload = WebSearchRequest(
            backend=settings.backend,
            url=url,
            query=query,
            limit=args.limit,
            api_key_env=settings.api_key_env,
        )
        return ctx.draft(self.name, payload, summary=f"Search the web ({settings.backend}) for {query!r}")

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        query = expect_payload(action, WebSearchRequest).query
        try:
            outcome = await execute_as(ctx, action, WebSearchOutcome)
        except FetchRefused as exc:
            return ToolOutput(f"Not searched: {exc}", is_error=True, data={"refused": True})
        except WebSearchFailed as exc:
            return ToolOutput(f"Search failed: {exc}", is_error=True)
        data: dict[str, Any] = {
            "backend": outcome.backend,
            "results": [hit.model_dump() for hit in outcome.hits],
        }
        if not outcome.hits:
            return ToolOutput(f"No results for {query!r}.", data=data)
        lines = [f"{len(outcome.hits)} result(s) for {query!r}:"]
        for number, hit in enumerate(outcome.hits, start=1):
            lines.append(f"\n{number}. {hit.title or '(no title)'}\n   {hit.url}")
            if hit.snippet:
                lines.append(f"   {hit.snippet}")
        return ToolOutput("\n".join(lines), data=data)
