"""``web_fetch``: fetch one http(s) URL through the SSRF-safe client and give the model readable markdown,
size-capped, with the final URL after redirects."""

from __future__ import annotations

from typing import Any, ClassVar

from seepient.net.url import UrlError, parse_url
from seepient.protocol import (
    ApprovedAction,
    FetchOutcome,
    FetchRefused,
    FetchRequest,
    PreparedActionDraft,
)
from seepient.tools.base import NonEmpty, Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import execute_as, expect_payload

MAX_RESULT_CHARS = 30_000
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/x-yaml")
_DROPPED_TAGS = ["script", "style", "noscript", "iframe", "svg", "head", "template"]


class WebFetchInput(ToolInput):
    url: NonEmpty
    """The http:// or https:// URL to fetch, e.g. 'https://docs.python.org/3/library/json.html'. Private,
    loopback and cloud-metadata addresses are refused."""


def html_to_markdown(html: str) -> str:
    """Readable markdown from an HTML page: scripts, styles and frames dropped, runs of blank lines folded."""
    # Loaded with the first HTML page rather than with every session: BeautifulSoup takes a while to import.
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    # Removed with their contents: a script's source or a stylesheet is noise, never page text.
    for tag in soup.find_all(_DROPPED_TAGS):
        tag.decompose()
    text = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    lines: list[str] = []
    blank = False
    for line in (raw.rstrip() for raw in text.splitlines()):
        if not line:
            if not blank and lines:
                lines.append("")
            blank = True
            continue
        blank = False
        lines.append(line)
    return "\n".join(lines).strip()


def _readable(outcome: FetchOutcome) -> tuple[str, str]:
    if outcome.content_type in _HTML_TYPES or (
        not outcome.content_type
        and outcome.text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
    ):
        return html_to_markdown(outcome.text), "markdown"
    if (
        outcome.content_type.startswith("text/")
        or outcome.content_type in _TEXT_TYPES
        or not outcome.content_type
    ):
        return outcome.text, "text"
    return "", "binary"


class WebFetchTool(Tool[WebFetchInput], read_only=True, concurrency_safe=True):
    """Fetch a public web page or text file over http(s) and return it as readable markdown (HTML is
    converted; scripts and styles dropped), with the final URL after redirects. Long pages are cut. Addresses
    on private networks, loopback and cloud metadata services are refused, as are ports other than 80 and 443
    unless configured."""

    name: ClassVar[str] = "web_fetch"
    max_result_chars: ClassVar[int] = MAX_RESULT_CHARS

    async def prepare(self, args: WebFetchInput, ctx: ToolContext) -> PreparedActionDraft:
        try:
            parsed = parse_url(args.url.strip())
        except UrlError as exc:
            raise ToolInputError(f"cannot fetch {args.url!r}: {exc}") from None
        # The draft carries the normalised URL, so policy's Fetch(domain:…) rules see the host that will
        # actually be contacted (IDNA applied, numeric IPv4 forms spelled out).
        payload = FetchRequest(url=parsed.geturl())
        return ctx.draft(self.name, payload, summary=f"Fetch {payload.url}")

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        request = expect_payload(action, FetchRequest)
        try:
            outcome = await execute_as(ctx, action, FetchOutcome)
        except FetchRefused as exc:
            return ToolOutput(str(exc), is_error=True, data={"url": request.url, "refused": True})
        body, form = _readable(outcome)
        cut = len(body) > MAX_RESULT_CHARS
        if cut:
            body = body[:MAX_RESULT_CHARS]
        header = [f"URL: {outcome.url}", f"Status: {outcome.status}"]
        if outcome.redirects:
            header.append(f"Redirected {len(outcome.redirects)} time(s) from {request.url}")
        if form == "binary":
            body = f"(binary content of type {outcome.content_type}; not shown)"
        if cut or outcome.truncated:
            body += "\n\n[content cut: the page is longer than the fetch limit]"
        data: dict[str, Any] = {
            "url": outcome.url,
            "status": outcome.status,
            "content_type": outcome.content_type,
            "redirects": list(outcome.redirects),
            "truncated": cut or outcome.truncated,
            "format": form,
        }
        return ToolOutput("\n".join(header) + "\n\n" + body, is_error=outcome.status >= 400, data=data)
