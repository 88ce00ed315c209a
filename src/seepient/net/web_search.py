"""Web search backends over the SSRF-safe client: SearXNG's JSON API, the Brave Search API and Tavily.

Each backend turns a query into one HTTP request and its JSON answer into title/URL/snippet hits. The API
key is added here, at the last moment, and never appears in a result, an error message or a log line.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from seepient.protocol.actions import WebSearchRequest
from seepient.protocol.errors import RefusalError
from seepient.protocol.retrieval import WebSearchFailed, WebSearchHit, WebSearchOutcome

if TYPE_CHECKING:
    from seepient.net.fetch import FetchResult, SafeFetcher

Backend = Literal["searxng", "brave", "tavily"]
DEFAULT_URLS: dict[str, str] = {
    "brave": "https://api.search.brave.com/res/v1/web/search",
    "tavily": "https://api.tavily.com/search",
}
MAX_SNIPPET_CHARS = 500
MAX_RESULT_BYTES = 2 * 1024 * 1024


class SearchRefused(RefusalError):
    """The address policy refused the backend (a private or loopback address not allowed in ``net``)."""


def endpoint(backend: Backend, url: str | None) -> str:
    """The URL a search request goes to: SearXNG's ``/search`` under its base URL, or the API's default."""
    if backend == "searxng":
        if not url:
            raise ValueError(
                'webSearch.url is required for the searxng backend, e.g. "https://searx.example.org"'
            )
        parts = urllib.parse.urlsplit(url)
        path = parts.path.rstrip("/")
        if not path.endswith("/search"):
            path += "/search"
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    return url or DEFAULT_URLS[backend]


def _request(
    backend: Backend, url: str, query: str, limit: int, key: str | None
) -> tuple[str, str, dict[str, str], bytes | None]:
    headers = {"accept": "application/json"}
    if backend == "searxng":
        if key:
            headers["authorization"] = f"Bearer {key}"
        params = urllib.parse.urlencode({"q": query, "format": "json"})
        return "GET", f"{url}?{params}", headers, None
    if not key:
        raise WebSearchFailed(
            f"the {backend} backend needs an API key: set webSearch.apiKeyEnv to the name of "
            "an environment variable that holds it, and export that variable"
        )
    if backend == "brave":
        headers["x-subscription-token"] = key
        params = urllib.parse.urlencode({"q": query, "count": str(min(limit, 20))})
        return "GET", f"{url}?{params}", headers, None
    headers["authorization"] = f"Bearer {key}"
    headers["content-type"] = "application/json"
    body = json.dumps({"query": query, "max_results": min(limit, 20), "search_depth": "basic"}).encode()
    return "POST", url, headers, body


def _clip(text: Any) -> str:
    value = " ".join(str(text or "").split())
    return value if len(value) <= MAX_SNIPPET_CHARS else value[: MAX_SNIPPET_CHARS - 1] + "…"


def parse_hits(backend: Backend, data: Any, limit: int) -> tuple[WebSearchHit, ...]:
    """Hits from a backend's JSON answer; entries without a URL are dropped."""
    if backend == "brave":
        items = ((data or {}).get("web") or {}).get("results") or []
        fields = ("title", "url", "description")
    elif backend == "tavily":
        items = (data or {}).get("results") or []
        fields = ("title", "url", "content")
    else:
        items = (data or {}).get("results") or []
        fields = ("title", "url", "content")
    hits: list[WebSearchHit] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping) or not isinstance(item.get(fields[1]), str):
            continue
        hits.append(
            WebSearchHit(
                title=_clip(item.get(fields[0])), url=item[fields[1]], snippet=_clip(item.get(fields[2]))
            )
        )
        if len(hits) >= limit:
            break
    return tuple(hits)


def _status_error(backend: str, result: FetchResult, key_env: str | None) -> WebSearchFailed:
    status = result.status
    where = f"the {backend} search backend ({result.url.split('?', 1)[0]})"
    if status in (401, 403):
        hint = f"check the key in ${key_env}" if key_env else "it may need an API key (webSearch.apiKeyEnv)"
        return WebSearchFailed(f"{where} refused the request as unauthorised (HTTP {status}): {hint}")
    if status == 429:
        retry = result.header("retry-after")
        after = f" (it asks to retry after {retry} s)" if retry else ""
        return WebSearchFailed(f"{where} is rate limiting (HTTP 429){after}; wait, then search again")
    if status >= 500:
        return WebSearchFailed(
            f"{where} failed (HTTP {status}); try again later or use web_fetch on a known page"
        )
    return WebSearchFailed(f"{where} answered HTTP {status}; check webSearch in the settings")


async def search(
    fetcher: SafeFetcher, request: WebSearchRequest, *, key: str | None = None
) -> WebSearchOutcome:
    """Run one search, with ``key`` the value of ``request.api_key_env``. Raises ``SearchRefused`` when the
    address policy blocks the backend and ``WebSearchFailed`` for anything else that went wrong (never with
    the key in its message)."""
    # The fetching half loads the HTTP stack: the web_search tool's preparation (``endpoint``) never needs it.
    from seepient.net.fetch import FetchBlocked, FetchError, TooManyRedirects

    backend = request.backend
    method, target, headers, body = _request(backend, request.url, request.query, request.limit, key)
    try:
        result = await fetcher.fetch(target, method, headers, body)
    except FetchBlocked as exc:
        raise SearchRefused(_scrub(str(exc), key)) from None
    except TooManyRedirects:
        raise WebSearchFailed(
            f"the {backend} search backend answered with a redirect; a request carrying an API key is not "
            "followed elsewhere. Point webSearch.url at the final address"
        ) from None
    except FetchError as exc:
        message = _scrub(str(exc), key)
        raise WebSearchFailed(f"the {backend} search backend could not be reached: {message}") from None
    if 300 <= result.status < 400:
        raise WebSearchFailed(
            f"the {backend} search backend answered with a redirect (HTTP {result.status}); point webSearch.url "
            "at the final address"
        )
    if result.status >= 400:
        raise _status_error(backend, result, request.api_key_env)
    try:
        data = json.loads(result.content.decode(result.charset or "utf-8", errors="replace"))
    except json.JSONDecodeError:
        hint = (
            " (for SearXNG, enable the json format under search.formats in its settings.yml)"
            if backend == "searxng"
            else ""
        )
        raise WebSearchFailed(f"the {backend} search backend did not answer with JSON{hint}") from None
    return WebSearchOutcome(backend=backend, hits=parse_hits(backend, data, request.limit))


def _scrub(text: str, key: str | None) -> str:
    return text.replace(key, "[key]") if key else text
