"""Model text as safe HTML for the web console: CommonMark rendered with raw HTML off, code highlighted,
then cleaned by an allow-list sanitiser, so nothing a model writes can become markup that acts."""

from __future__ import annotations

import functools

import nh3
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

# Structure only: no forms, buttons, images, media, frames or styles. An <img> would load from anywhere
# the model names (a tracking pixel), and a <button> could pass for one of the console's own controls.
_TAGS = {
    "p", "br", "hr", "em", "strong", "s", "del", "code", "pre", "span", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "a",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "span": {"class"}, "code": {"class"}, "ol": {"start"}}
_URL_SCHEMES = {"http", "https", "mailto"}
_FORMATTER = HtmlFormatter(nowrap=True, classprefix="hl-")


def _highlight(code: str, language: str, _attrs: str) -> str:
    # Pygments escapes the code itself; an unknown language falls back to markdown-it's own escaping.
    try:
        lexer = get_lexer_by_name(language.strip()) if language.strip() else None
    except ClassNotFound:
        lexer = None
    return highlight(code, lexer, _FORMATTER) if lexer is not None else ""


@functools.cache
def _parser() -> MarkdownIt:
    # ``html: False`` makes raw HTML in the text literal text; the sanitiser is the second wall.
    return (
        MarkdownIt("commonmark", {"html": False, "highlight": _highlight})
        .enable("table")
        .enable("strikethrough")
    )


def render_markdown(text: str) -> str:
    """``text`` as sanitised HTML: links keep only http, https and mailto targets and open nothing else."""
    return nh3.clean(
        _parser().render(text),
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
