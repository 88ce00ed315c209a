"""safe_fetch against real loopback servers: pinning under DNS rebinding, redirect bounds and re-validation,
credential stripping, method rewriting, the size cap, slow servers, and environment proxies ignored."""

from __future__ import annotations

import asyncio
import gzip

import pytest

from seepient.net import (
    AddressPolicy,
    FetchBlocked,
    FetchTimeout,
    FetchTooLarge,
    SafeFetcher,
    TooManyRedirects,
    safe_fetch,
)
from tests.net.conftest import loopback_policy, mapped_resolver
from tests.net.local_http import LocalHttpServer, Reply, redirect, text


async def test_fetches_a_page_through_the_allowlist(server: LocalHttpServer) -> None:
    server.routes["/"] = text("hello")
    result = await safe_fetch(server.url("/"), policy=loopback_policy(server))
    assert (result.status, result.content, result.address) == (200, b"hello", "127.0.0.1")
    assert result.url == server.url("/")


async def test_production_defaults_block_loopback(server: LocalHttpServer) -> None:
    server.routes["/"] = text("secret")
    for policy in (AddressPolicy(), AddressPolicy.build(allow_ports=[server.port])):
        with pytest.raises(FetchBlocked) as caught:
            await safe_fetch(server.url("/"), policy=policy)
        assert "loopback" in str(caught.value) or "port" in str(caught.value)
    with pytest.raises(FetchBlocked, match="loopback"):
        await safe_fetch(server.url("/"), policy=AddressPolicy.build(allow_ports=[server.port]))
    assert server.seen == []


async def test_dns_rebinding_connects_to_the_validated_address(server: LocalHttpServer) -> None:
    """The resolver answers the allowed address first and an internal one (same port, another loopback
    address) on every later lookup; the request must land on the first, resolved once per hop."""
    internal = await LocalHttpServer(host="127.0.0.2", port=server.port).start()
    try:
        server.routes["/"] = text("public")
        internal.routes["/"] = text("INTERNAL")
        answers = [["127.0.0.1"]]
        lookups: list[str] = []

        async def rebinding(host: str, port: int) -> list[str]:
            lookups.append(host)
            return answers.pop(0) if answers else ["127.0.0.2"]

        result = await safe_fetch(
            f"http://rebind.test:{server.port}/", policy=loopback_policy(server), resolver=rebinding
        )
        assert result.content == b"public" and result.address == "127.0.0.1"
        assert lookups == ["rebind.test"]
        assert internal.seen == []
        assert server.seen[0].headers["host"] == f"rebind.test:{server.port}"
        # The second lookup now answers the internal address: refused before any connection.
        with pytest.raises(FetchBlocked, match="127.0.0.2 is loopback"):
            await safe_fetch(
                f"http://rebind.test:{server.port}/", policy=loopback_policy(server), resolver=rebinding
            )
        assert internal.seen == []
    finally:
        await internal.close()


async def test_one_blocked_answer_among_many_blocks_the_host(server: LocalHttpServer) -> None:
    resolver = mapped_resolver({"mixed.test": ["127.0.0.1", "169.254.169.254"]})
    with pytest.raises(FetchBlocked, match="169.254.169.254 is link-local"):
        await safe_fetch(
            f"http://mixed.test:{server.port}/", policy=loopback_policy(server), resolver=resolver
        )
    assert server.seen == []


def _chain(server: LocalHttpServer, hops: int) -> str:
    for index in range(hops):
        server.routes[f"/r{index}"] = redirect(f"/r{index + 1}")
    server.routes[f"/r{hops}"] = text("end of chain")
    return server.url("/r0")


async def test_five_redirects_are_followed(server: LocalHttpServer) -> None:
    result = await safe_fetch(_chain(server, 5), policy=loopback_policy(server))
    assert result.content == b"end of chain"
    assert len(result.redirects) == 5 and result.url == server.url("/r5")


async def test_six_redirects_are_refused(server: LocalHttpServer) -> None:
    with pytest.raises(TooManyRedirects, match="more than 5"):
        await safe_fetch(_chain(server, 6), policy=loopback_policy(server))
    assert [seen.path for seen in server.seen] == [f"/r{i}" for i in range(6)]


@pytest.mark.parametrize(
    "location",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://0x7f000002/",
        "http://10.0.0.1/",
        "file:///etc/passwd",
        "http://user:pw@example.com/",
    ],
)
async def test_redirect_to_a_blocked_target_is_refused(server: LocalHttpServer, location: str) -> None:
    server.routes["/go"] = redirect(location)
    with pytest.raises(FetchBlocked):
        await safe_fetch(server.url("/go"), policy=loopback_policy(server))


async def test_redirect_to_an_internal_name_is_refused(
    server: LocalHttpServer, internal_server: LocalHttpServer
) -> None:
    internal_server.routes["/"] = text("INTERNAL")
    server.routes["/go"] = redirect(f"http://internal.test:{internal_server.port}/")
    resolver = mapped_resolver({"internal.test": ["127.0.0.2"]})
    policy = loopback_policy(server, internal_server)
    with pytest.raises(FetchBlocked, match="127.0.0.2 is loopback"):
        await safe_fetch(server.url("/go"), policy=policy, resolver=resolver)
    assert internal_server.seen == []


async def test_credentials_are_dropped_across_origins_and_kept_within(server: LocalHttpServer) -> None:
    other = await LocalHttpServer().start()
    try:
        other.routes["/land"] = text("landed")
        server.routes["/same"] = redirect("/cross")
        server.routes["/cross"] = redirect(f"http://other.test:{other.port}/land")
        resolver = mapped_resolver({"origin.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
        secrets = {
            "Authorization": "Bearer s3cret",
            "Cookie": "sid=1",
            "Proxy-Authorization": "Basic x",
            "X-Keep": "1",
        }
        result = await safe_fetch(
            f"http://origin.test:{server.port}/same",
            headers=secrets,
            policy=loopback_policy(server, other),
            resolver=resolver,
        )
        assert result.content == b"landed"
        first, second = server.seen
        assert first.headers["authorization"] == "Bearer s3cret" and second.headers["cookie"] == "sid=1"
        assert "proxy-authorization" not in first.headers  # never sent to an origin at all
        landed = other.seen[0].headers
        assert (
            "authorization" not in landed and "cookie" not in landed and "proxy-authorization" not in landed
        )
        assert landed["x-keep"] == "1"
    finally:
        await other.close()


@pytest.mark.parametrize(
    ("status", "method", "expected"),
    [
        (301, "POST", "GET"),
        (302, "POST", "GET"),
        (303, "PUT", "GET"),
        (307, "POST", "POST"),
        (308, "POST", "POST"),
    ],
)
async def test_redirect_method_rewriting(
    server: LocalHttpServer, status: int, method: str, expected: str
) -> None:
    server.routes["/form"] = redirect("/done", status)
    server.routes["/done"] = text("ok")
    await safe_fetch(
        server.url("/form"),
        method,
        {"Content-Type": "text/plain"},
        b"payload",
        policy=loopback_policy(server),
    )
    final = server.seen[-1]
    assert final.method == expected
    assert final.body == (b"payload" if expected == "POST" else b"")


async def test_the_size_cap_refuses_or_truncates(server: LocalHttpServer) -> None:
    server.routes["/big"] = lambda seen: Reply(200, body=b"x" * 5000)
    server.routes["/bomb"] = lambda seen: Reply(
        200, {"content-encoding": "gzip"}, gzip.compress(b"0" * 200_000)
    )

    async def endless(writer: asyncio.StreamWriter) -> None:
        while True:
            writer.write(b"y" * 1024)
            await writer.drain()

    server.routes["/endless"] = lambda seen: Reply(200, stream=endless)
    async with SafeFetcher(loopback_policy(server), max_response_bytes=4096) as fetcher:
        with pytest.raises(FetchTooLarge, match="4096-byte cap"):
            await fetcher.fetch(server.url("/big"))
        with pytest.raises(FetchTooLarge):
            await fetcher.fetch(server.url("/bomb"))
        with pytest.raises(FetchTooLarge):
            await fetcher.fetch(server.url("/endless"))
        cut = await fetcher.fetch(server.url("/big"), on_too_large="truncate")
        assert cut.truncated and cut.content == b"x" * 4096


async def test_a_server_that_never_answers_hits_the_hop_timeout(server: LocalHttpServer) -> None:
    async def never(seen: object) -> Reply:
        await asyncio.sleep(3600)
        raise AssertionError

    server.routes["/stall"] = never
    with pytest.raises(FetchTimeout, match="did not answer"):
        await safe_fetch(server.url("/stall"), policy=loopback_policy(server), hop_timeout_s=0.3)


async def test_a_trickling_server_hits_the_overall_deadline(server: LocalHttpServer) -> None:
    async def trickle(writer: asyncio.StreamWriter) -> None:
        while True:
            writer.write(b".")
            await writer.drain()
            await asyncio.sleep(0.05)

    server.routes["/slow"] = lambda seen: Reply(200, stream=trickle)
    with pytest.raises(FetchTimeout, match="within 0.5 s"):
        await safe_fetch(server.url("/slow"), policy=loopback_policy(server), hop_timeout_s=5, deadline_s=0.5)


async def test_environment_proxies_and_netrc_are_ignored(
    server: LocalHttpServer, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    proxy = await LocalHttpServer().start()
    try:
        proxy.routes["/"] = text("via proxy")
        server.routes["/"] = text("direct")
        for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "HTTPS_PROXY"):
            monkeypatch.setenv(name, proxy.url("/"))
        (tmp_path / ".netrc").write_text("machine 127.0.0.1 login u password p\n")
        monkeypatch.setenv("NETRC", str(tmp_path / ".netrc"))
        monkeypatch.setenv("HOME", str(tmp_path))
        result = await safe_fetch(server.url("/"), policy=loopback_policy(server))
        assert result.content == b"direct" and proxy.seen == []
        assert "authorization" not in server.seen[0].headers
    finally:
        await proxy.close()


async def test_cookies_do_not_persist_between_fetches(server: LocalHttpServer) -> None:
    server.routes["/set"] = lambda seen: Reply(200, {"set-cookie": "sid=abc; Path=/"}, b"set")
    server.routes["/look"] = text("look")
    async with SafeFetcher(loopback_policy(server)) as fetcher:
        await fetcher.fetch(server.url("/set"))
        await fetcher.fetch(server.url("/look"))
    assert "cookie" not in server.seen[1].headers


async def test_non_default_ports_need_configuration(server: LocalHttpServer) -> None:
    server.routes["/"] = text("x")
    with pytest.raises(FetchBlocked, match=f"port {server.port} is not 80 or 443"):
        await safe_fetch(server.url("/"), policy=AddressPolicy.build(allow_ranges=["127.0.0.1/32"]))
    assert server.seen == []
