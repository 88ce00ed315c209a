"""web_fetch: a fetch draft carrying the normalised URL, readable markdown through the real executor and
safe_fetch, the final URL after redirects, the size cap, and refusals returned to the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seepient.execution.local import LocalExecutor
from seepient.policy.paths import PathGuard
from seepient.protocol import ActionKind, FetchRequest
from seepient.tools.base import ToolContext, ToolInputError
from seepient.tools.builtin.web_fetch import MAX_RESULT_CHARS, WebFetchInput, WebFetchTool, html_to_markdown
from seepient.tools.registry import builtin_registry
from tests.approved import approve
from tests.net.conftest import loopback_policy, mapped_resolver
from tests.net.local_http import LocalHttpServer, Reply, redirect, text

PAGE = """<!doctype html><html><head><title>T</title><style>body{color:red}</style>
<script>alert('x')</script></head><body><h1>Install</h1><p>Run <code>pip install seepient</code>
and read <a href="/docs">the docs</a>.</p><ul><li>one</li><li>two</li></ul></body></html>"""


@pytest.fixture
async def site() -> Any:
    server = await LocalHttpServer().start()
    yield server
    await server.close()


def _ctx(tmp_path: Path, executor: LocalExecutor) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return ToolContext(
        workspace=workspace,
        session_id="ses",
        call_id="call",
        paths=PathGuard(workspace, seepient_home=tmp_path / "sh", home=tmp_path / "home"),
        executor=executor,
        reads=executor.reads,
    )


def _executor(tmp_path: Path, site: LocalHttpServer, **kwargs: Any) -> LocalExecutor:
    (tmp_path / "ws").mkdir(exist_ok=True)
    return LocalExecutor(tmp_path / "ws", seepient_home=tmp_path / "sh", home=tmp_path / "home", **kwargs)


async def _fetch(tmp_path: Path, executor: LocalExecutor, url: str) -> Any:
    tool = WebFetchTool()
    ctx = _ctx(tmp_path, executor)
    draft = await tool.prepare(WebFetchInput(url=url), ctx)
    return draft, await tool.execute(approve(draft), ctx)


def test_web_fetch_is_a_builtin_tool() -> None:
    assert "web_fetch" in builtin_registry().names()


async def test_draft_is_a_fetch_with_the_normalised_url(tmp_path: Path, site: LocalHttpServer) -> None:
    tool, ctx = WebFetchTool(), _ctx(tmp_path, _executor(tmp_path, site))
    draft = await tool.prepare(WebFetchInput(url="HTTP://0x7f.1:8080/a#frag"), ctx)
    assert draft.kind == ActionKind.FETCH and draft.read_only
    assert draft.payload == FetchRequest(url="http://127.0.0.1:8080/a")
    idna = await tool.prepare(WebFetchInput(url="https://Bücher.example/"), ctx)
    assert isinstance(idna.payload, FetchRequest) and idna.payload.url == "https://xn--bcher-kva.example/"
    for bad in ("file:///etc/passwd", "http://user:pw@example.com/", "http://a\\@b/"):
        with pytest.raises(ToolInputError, match="cannot fetch"):
            await tool.prepare(WebFetchInput(url=bad), ctx)


async def test_html_becomes_readable_markdown_with_the_final_url(
    tmp_path: Path, site: LocalHttpServer
) -> None:
    site.routes["/old"] = redirect("/page", 301)
    site.routes["/page"] = text(PAGE, "text/html; charset=utf-8")
    executor = _executor(
        tmp_path,
        site,
        net_policy=loopback_policy(site),
        net_resolver=mapped_resolver({"docs.test": ["127.0.0.1"]}),
    )
    _, output = await _fetch(tmp_path, executor, f"http://docs.test:{site.port}/old")
    assert not output.is_error
    assert f"URL: http://docs.test:{site.port}/page" in output.text
    assert "# Install" in output.text and "[the docs](/docs)" in output.text and "- one" in output.text
    assert "alert" not in output.text and "color:red" not in output.text
    assert output.data["redirects"] == [f"http://docs.test:{site.port}/page"]


async def test_long_pages_are_cut(tmp_path: Path, site: LocalHttpServer) -> None:
    site.routes["/long"] = lambda seen: Reply(
        200, {"content-type": "text/plain"}, b"z" * (MAX_RESULT_CHARS + 5000)
    )
    executor = _executor(tmp_path, site, net_policy=loopback_policy(site))
    _, output = await _fetch(tmp_path, executor, site.url("/long"))
    assert output.data["truncated"] and "[content cut" in output.text
    assert output.text.count("z") == MAX_RESULT_CHARS


async def test_blocked_addresses_come_back_as_errors(tmp_path: Path, site: LocalHttpServer) -> None:
    site.routes["/"] = text("secret")
    site.routes["/hop"] = redirect("http://169.254.169.254/latest/meta-data/")
    default = _executor(tmp_path, site)
    _, output = await _fetch(tmp_path, default, site.url("/"))
    assert output.is_error and "refused to fetch" in output.text
    allowed = _executor(tmp_path, site, net_policy=loopback_policy(site))
    _, hop = await _fetch(tmp_path, allowed, site.url("/hop"))
    assert hop.is_error and "169.254.169.254 is link-local" in hop.text
    assert [seen.path for seen in site.seen] == ["/hop"]


def test_html_to_markdown_drops_scripts() -> None:
    markdown = html_to_markdown("<p>a</p><script>evil()</script><p>b</p>")
    assert "evil" not in markdown and "a" in markdown and "b" in markdown
