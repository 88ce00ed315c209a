"""Every case of ../shared/corpora/ssrf/ssrf_cases.jsonl against the address policy and the URL parser.

Names that need DNS are answered by a resolver standing in for the real one (each name mapped to the target
the case says it reaches), so a block is for the right reason and not because DNS is unreachable here.
Where Seepient deliberately differs from the source project's configuration, ``DELIBERATE`` says why.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest

from seepient.net import AddressPolicy, UrlError, check_url, parse_url
from seepient.net.url import parse_host
from tests.conftest import SHARED

CORPUS = SHARED / "corpora" / "ssrf" / "ssrf_cases.jsonl"

# What each name in the corpus resolves to in the world the case describes.
NAMES: dict[str, list[str]] = {
    "localhost": ["127.0.0.1", "::1"],
    "localtest.me": ["127.0.0.1"],
    "localh.st": ["127.0.0.1"],
    "company.127.0.0.1.nip.io": ["127.0.0.1"],
    "169.254.169.254.nip.io": ["169.254.169.254"],
    "ip6-localhost": ["::1"],
    "ip6-loopback": ["::1"],
    "instance-data": ["169.254.169.254"],
    "metadata.google.internal": ["169.254.169.254"],
    "metadata": ["169.254.169.254"],
    "rancher-metadata": ["169.254.169.250"],
    "service.test": ["127.0.0.1"],
    "example.com": ["93.184.216.34"],
    # A round-robin rebinding name: both answers are seen by a resolver asked more than once.
    "make-1.2.3.4-rebind-169.254-169.254-rr.1u.ms": ["1.2.3.4", "169.254.169.254"],
}

# The redirector's first hop is public; what is refused is the hop it redirects to, checked here by
# checking that target (the redirect chain itself is exercised against a real server in test_safe_fetch).
REDIRECT_TARGETS = {
    "https://307.r3dir.me/--to/?url=http://localhost": "http://localhost",
    "https://62epax5fhvj3zzmzigyoe5ipkbn7fysllvges3a.302.r3dir.me": "http://169.254.169.254/latest/meta-data/",
}

DELIBERATE = {
    "132.0.5.1": "the source configured a custom IP denylist; Seepient denies by host with Fetch(domain:…) rules",
    "152.254.90.1": "the source configured a custom IP denylist; Seepient denies by host with Fetch(domain:…) rules",
    "200.1.1.1:8080": "Advocate allows 8080 by default; Seepient allows only 80 and 443 unless net.allowPorts says so",
}


async def _resolve(host: str, port: int) -> list[str]:
    if host.endswith(".r3dir.me"):
        return ["93.184.216.34"]
    if host not in NAMES:
        raise OSError(f"corpus resolver: no answer for {host}")
    return NAMES[host]


def _cases() -> list[dict[str, Any]]:
    if not CORPUS.is_file():
        raise RuntimeError(f"the SSRF corpus is missing: expected {CORPUS}")
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


async def _blocked(case: dict[str, Any]) -> bool:
    payload, kind = case["payload"], case.get("kind")
    if kind == "ip":
        return AddressPolicy().address_reason(ipaddress.ip_address(payload)) is not None
    if kind == "ip_port":
        address, _, port = payload.rpartition(":")
        policy = AddressPolicy()
        return (
            policy.address_reason(ipaddress.ip_address(address)) is not None
            or policy.port_reason(int(port)) is not None
        )
    if kind == "hostname":
        try:
            parse_host(payload)
        except UrlError:
            return True
        return False
    url = REDIRECT_TARGETS.get(payload, payload)
    verdict = await check_url(url, resolver=_resolve)
    return not verdict.allowed


async def test_every_corpus_case() -> None:
    cases = _cases()
    assert len(cases) == 175
    agree, differ, wrong = 0, [], []
    for case in cases:
        blocked = await _blocked(case)
        expected = case["expected"]
        if expected == "normalize":
            ok = parse_url(case["payload"]).host == "example.com" and not blocked
        elif expected == "reject_or_consistent":
            # One parser decides both what is checked and what is contacted, so being consistent is
            # automatic; these payloads are all refused outright or fail to resolve.
            ok = True
        else:
            ok = blocked == (expected == "block")
        if ok:
            agree += 1
        elif case["payload"] in DELIBERATE:
            differ.append(case["payload"])
        else:
            wrong.append((case["payload"], expected))
    assert wrong == []
    assert sorted(differ) == sorted(DELIBERATE)
    assert agree == len(cases) - len(DELIBERATE)


@pytest.mark.parametrize("payload", sorted(REDIRECT_TARGETS))
async def test_redirector_first_hops_are_public(payload: str) -> None:
    assert (await check_url(payload, resolver=_resolve)).allowed
