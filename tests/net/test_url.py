"""Strict URL parsing: legacy IPv4 spellings normalised, IDNA applied, parser-confusion tricks refused."""

from __future__ import annotations

import pytest

from seepient.net import UrlError, parse_url
from seepient.net.url import join_url


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://2130706433/", "127.0.0.1"),
        ("http://0x7f000001/", "127.0.0.1"),
        ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://127.1/", "127.0.0.1"),
        ("http://127.0.1/", "127.0.0.1"),
        ("http://0x7f.0x0.0x00000000.0x01", "127.0.0.1"),
        ("http://0251.00376.000251.0000376", "169.254.169.254"),
        ("http://0/", "0.0.0.0"),
        ("http://[0:0:0:0:0:ffff:169.254.169.254]/", "::ffff:a9fe:a9fe"),
        ("HTTP://ExAmPle.COM./x", "example.com"),
        ("http://ⓔⓧⓐⓜⓟⓛⓔ.ⓒⓞⓜ/", "example.com"),
        ("https://bücher.example/", "xn--bcher-kva.example"),
    ],
)
def test_hosts_are_normalised_before_checking(url: str, host: str) -> None:
    assert parse_url(url).host == host


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/",
        "file:///etc/passwd",
        "gopher://localhost:25/",
        "jar:http://127.0.0.1!/",
        "http:127.0.0.1/",
        "http:/example.com/",
        "http://user:pass@example.com/",
        "http://example.com@169.254.169.254/",
        "http://127.1.1.1:80\\@127.2.2.2:80/",
        "http://1.1.1.1 &@2.2.2.2# @3.3.3.3/",
        "http://exa mple.com/",
        "http://example.com/\tpath",
        "http://example.com\x00.evil/",
        "http://[]/",
        "http://:123/",
        "http://example.com:0/",
        "http://example.com:99999/",
        "http://example.com:80:80/",
        "http://[fe80::1%25eth0]/",
        "http://%31%32%37.0.0.1/",
        "http://425.510.425.510/",
        "http://0x41414141A9FEA9FE/",
        "http://1.2.3.4.5/",
        "http://a.1/",
    ],
)
def test_dangerous_or_ambiguous_urls_are_refused(url: str) -> None:
    with pytest.raises(UrlError):
        parse_url(url)


def test_parts() -> None:
    parsed = parse_url("https://Example.com:8443/a/b?q=1#frag")
    assert (parsed.scheme, parsed.host, parsed.port, parsed.target) == (
        "https",
        "example.com",
        8443,
        "/a/b?q=1",
    )
    assert parsed.geturl() == "https://example.com:8443/a/b?q=1"
    assert parse_url("http://[::1]:8080").geturl() == "http://[::1]:8080/"


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("/x", "https://a.example/x"),
        ("y", "https://a.example/dir/y"),
        ("../up", "https://a.example/up"),
        ("?q=2", "https://a.example/dir/page?q=2"),
        ("//b.example/z", "https://b.example/z"),
        ("http://c.example/", "http://c.example/"),
    ],
)
def test_redirect_locations_resolve_against_the_current_url(location: str, expected: str) -> None:
    assert join_url(parse_url("https://a.example/dir/page?q=1"), location).geturl() == expected


def test_redirect_to_another_scheme_is_refused() -> None:
    with pytest.raises(UrlError):
        join_url(parse_url("https://a.example/"), "file:///etc/passwd")
