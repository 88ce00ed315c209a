"""Model text rendered for the console: markdown becomes structure, and nothing in it can become markup that
acts (scripts, event handlers, ``javascript:`` links, forms, buttons, images, styles)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from seepient.surfaces.server.console_markdown import render_markdown

HOSTILE = [
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 1">',
    "<button class='control approve' data-control='approval'>Approve once</button>",
    '<a href="javascript:window.__pwned=1">click</a>',
    "[click](javascript:window.__pwned=1)",
    "[click](JaVaScRiPt&#58;alert(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![pixel](https://tracker.example/p.png)",
    '<svg onload="window.__pwned=1"></svg>',
    '<iframe src="https://evil.example"></iframe>',
    "<form action='https://evil.example'><input name=token></form>",
    '<div style="position:fixed;inset:0">cover</div>',
    "```html\n<script>window.__pwned = 1</script>\n```",
    "<!-- <script>x</script> -->",
    '[x](https://ok.example "t" onclick="window.__pwned=1")',
]


class _Elements(HTMLParser):
    """The elements and attributes a browser would build from the HTML (text stays text)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_never_renders_as_markup_that_acts(text: str) -> None:
    html = render_markdown(text)
    for tag, attributes in _Elements(html).found:
        assert tag in {"p", "a", "pre", "code", "span"}, html
        assert set(attributes) <= {"href", "rel", "class", "title"}, html
        href = attributes.get("href")
        assert href is None or href.startswith("https://ok.example"), html


def test_raw_html_stays_visible_as_text() -> None:
    html = render_markdown("Click <button>Approve once</button> now")
    assert html == "<p>Click &lt;button&gt;Approve once&lt;/button&gt; now</p>\n"


def test_markdown_structure_and_highlighted_code_survive() -> None:
    html = render_markdown(
        "# Title\n\n**bold** and *em* and ~~gone~~, a [link](https://example.org)\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\ndef f():\n    return '<b>'\n```\n"
    )
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html and "<s>gone</s>" in html
    assert '<a href="https://example.org" rel="noopener noreferrer nofollow">link</a>' in html
    assert "<table>" in html and "<td>2</td>" in html
    assert '<span class="hl-k">def</span>' in html and "&lt;b&gt;" in html


def test_an_unknown_code_language_is_escaped_plain_code() -> None:
    html = render_markdown("```nosuchlanguage\n<script>x</script>\n```")
    assert (
        html == '<pre><code class="language-nosuchlanguage">&lt;script&gt;x&lt;/script&gt;\n</code></pre>\n'
    )
