"""Policy says no where the fetch would: a fetch the address policy refuses (an address literal in a blocked
range in any spelling, a port, a name that always resolves locally, a URL the strict parser rejects) is denied
at policy time in every mode, whatever allow rule or grant exists; the user's net allowlists still apply, and
other names are left to the pinned fetch (policy resolves nothing)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from seepient.config.settings import PermissionSettings
from seepient.net import AddressPolicy
from seepient.policy import PolicyEngine
from seepient.protocol import ActionKind, Decision, FetchRequest, PreparedActionDraft
from seepient.protocol.actions import WebSearchRequest

MODES = ("always-ask", "ask-untrusted", "auto", "autonomous-trusted")

# The same address, spelled every way a URL or a stack accepts it.
METADATA_SPELLINGS = [
    "http://169.254.169.254/latest/meta-data/",
    "http://2852039166/",
    "http://0xA9FEA9FE/",
    "http://0xA9.0xFE.0xA9.0xFE/",
    "http://0251.0376.0251.0376/",
    "http://169.254.43518/",
    "http://169.16689662/",
    "http://169.254.169.254./",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[0:0:0:0:0:ffff:169.254.169.254]/",
    "http://[::ffff:0:a9fe:a9fe]/",  # IPv4-translated (RFC 2765)
    "http://[::169.254.169.254]/",  # IPv4-compatible
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64, a prefix the registry calls global
    "http://[64:ff9b:1::a9fe:a9fe]/",
    "http://[2002:a9fe:a9fe::1]/",  # 6to4
    "http://[2001:0:a9fe:a9fe::1]/",  # Teredo server
    "http://[2001:0:4136:e378:8000:63bf:5601:5601]/",  # Teredo client 169.254.169.254, bits inverted
    "http://[2a00:1450::200:5efe:a9fe:a9fe]/",  # ISATAP interface id
    "http://[fd00:ec2::254]/",
    "http://ＬＯＣＡＬＨＯＳＴ/",
]
LOOPBACK_SPELLINGS = [
    "http://127.0.0.1/",
    "http://127.1/",
    "http://0177.0.0.1/",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://[::1]/",
    "http://[::ffff:0:7f00:1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[0000::1]:80/",
    "http://localhost/",
    "http://LOCALHOST./",
    "http://api.localhost/",
    "http://localhost.localdomain/",
    "http://①②⑦.0.0.1/",
    "http://127。0。0。1/",
    "http://0/",
    "http://[::]/",
]
SPECIAL_PURPOSE = [
    "http://[2001:20::1]/",  # ORCHIDv2
    "http://[2001:10::1]/",  # ORCHID (terminated)
    "http://[5f00::1]/",  # SRv6 SIDs
    "http://192.31.196.1/",  # AS112
    "http://192.175.48.6/",
    "http://[2620:4f:8000::1]/",
    "http://[2001:4:112::1]/",
    "http://192.0.0.9/",  # PCP anycast
    "http://192.52.193.1/",  # AMT
    "http://[100:0:0:1::1]/",  # dummy prefix
    "http://[3fff::1]/",
    "http://100.64.0.1/",
    "http://198.18.0.1/",
    "http://224.0.0.1/",
    "http://[ff02::1]/",
    "http://[fec0::1]/",
    "http://[4000::1]/",  # outside 2000::/3
]
LOCAL_NAMES = [
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://metadata/computeMetadata/v1/",
    "http://instance-data/",
    "http://ip6-localhost/",
    "http://printer.local/",
    "http://router.home.arpa/",
    "http://wiki.corp/",
    "http://nas.lan/",
]
PORTS = ["http://example.com:8080/", "https://93.184.216.34:22/", "http://example.com:6379/"]


def fetch(url: str, tool: str = "web_fetch") -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool=tool,
        kind=ActionKind.FETCH,
        payload=FetchRequest(url=url),
        read_only=True,
        summary=f"Fetch {url}",
    )


def engine(layout, mode: str = "ask-untrusted", *, net: AddressPolicy | None = None, **rules: Any):
    return PolicyEngine(
        layout.workspace,
        seepient_home=layout.seepient_home,
        mode=mode,
        permissions=PermissionSettings(**rules),
        home=layout.home,
        net_policy=net,
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "url", METADATA_SPELLINGS + LOOPBACK_SPELLINGS + SPECIAL_PURPOSE + LOCAL_NAMES + PORTS
)
def test_refused_targets_are_denied_in_every_mode_whatever_allows_them(layout, mode: str, url: str) -> None:
    """A bare allow rule for every fetch, in autonomous-trusted mode: still denied, with the fetch's reason."""
    verdict = engine(layout, mode, allow=["Fetch", "web_fetch"]).evaluate(fetch(url))
    assert verdict.decision is Decision.DENY, (url, verdict)
    assert verdict.rule == "fetch:address_policy"
    assert verdict.reasons[0].startswith("the fetch address policy refuses")


def test_the_reason_names_the_address_behind_each_spelling(layout) -> None:
    policy = engine(layout)
    for url in ("http://0xA9FEA9FE/", "http://[64:ff9b::a9fe:a9fe]/", "http://[2002:a9fe:a9fe::1]/"):
        reason = policy.evaluate(fetch(url)).reasons[0]
        assert "169.254.169.254" in reason and "link-local" in reason, reason
    reason = policy.evaluate(fetch("http://[::ffff:0:7f00:1]/")).reasons[0]
    assert "127.0.0.1" in reason and "loopback" in reason
    assert "RFC 6761" in policy.evaluate(fetch("http://foo.localhost/")).reasons[0]
    assert "without a dot" in policy.evaluate(fetch("http://metadata/")).reasons[0]
    assert "net.allowPorts" in policy.evaluate(fetch("http://example.com:8080/")).reasons[0]


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com@evil.net/",
        "http://a\\@169.254.169.254/",
        "http://1.1.1.1 &@2.2.2.2# @3.3.3.3/",
        "http://127.1.1.1:80\\@127.2.2.2:80/",
        "http://o177.0.0.1/",
        "http://[::1%25lo]/",
        "http://[fe80::1%25eth0]/",
        "http://425.510.425.510/",
        "http://0x41414141A9FEA9FE/",
    ],
)
def test_urls_the_fetch_cannot_parse_are_denied(layout, url: str) -> None:
    verdict = engine(layout, "autonomous-trusted", allow=["Fetch"]).evaluate(fetch(url))
    assert (verdict.decision, verdict.rule) == (Decision.DENY, "fetch:invalid_url"), verdict


def test_a_deny_rule_is_still_named_first(layout) -> None:
    verdict = engine(layout, deny=["Fetch(domain:localhost)"]).evaluate(fetch("http://localhost/"))
    assert verdict.rule == "deny:Fetch(domain:localhost)"


def test_public_targets_and_ordinary_names_are_left_to_the_mode_and_the_pinned_fetch(layout) -> None:
    """Policy resolves nothing: a name that DNS may point anywhere (nip.io, a rebinding name) is for the
    pinned fetch to refuse, and a public address is for the mode to weigh."""
    policy = engine(layout)
    for url in (
        "https://example.com/",
        "https://93.184.216.34/",
        "https://[2606:4700::1111]/",
        "http://[64:ff9b::808:808]/",
        "http://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/",  # Teredo between public addresses
        "http://169.254.169.254.nip.io/",
        "http://localtest.me/",
        "http://make-1.2.3.4-rebind-169.254-169.254-rr.1u.ms/",
        "http://localhost.example.com/",
    ):
        verdict = policy.evaluate(fetch(url))
        assert (verdict.decision, verdict.rule) == (Decision.ASK, "mode:ask-untrusted"), (url, verdict)


def test_the_users_net_allowlists_apply_at_policy_time(layout) -> None:
    net = AddressPolicy.build(
        allow_hosts=["wiki.corp", "*.svc.internal"], allow_ranges=["10.1.0.0/16"], allow_ports=[8443]
    )
    policy = engine(layout, net=net)
    for url in (
        "http://10.1.2.3/",
        "http://wiki.corp/",
        "https://api.svc.internal:8443/",
        "https://example.com:8443/",
    ):
        assert policy.evaluate(fetch(url)).decision is Decision.ASK, url
    for url in ("http://10.2.0.1/", "http://127.0.0.1/", "http://10.1.2.3:8080/", "http://localhost/"):
        assert policy.evaluate(fetch(url)).rule == "fetch:address_policy", url
    # '*.' names subdomains only, as at fetch time.
    hosts_only = engine(layout, net=AddressPolicy.build(allow_hosts=["*.svc.internal"]))
    assert hosts_only.evaluate(fetch("http://api.svc.internal/")).decision is Decision.ASK
    assert hosts_only.evaluate(fetch("http://svc.internal/")).rule == "fetch:address_policy"


def test_internal_ranges_leave_private_names_to_the_fetch_but_not_loopback(layout) -> None:
    """With an internal range opened, what printer.local resolves to is for the pinned fetch to judge; a
    loopback name is still refused unless both loopback addresses are opened."""
    ranges = engine(layout, net=AddressPolicy.build(allow_ranges=["192.168.0.0/16"]))
    assert ranges.evaluate(fetch("http://printer.local/")).decision is Decision.ASK
    assert ranges.evaluate(fetch("http://localhost/")).rule == "fetch:address_policy"
    half = engine(layout, net=AddressPolicy.build(allow_ranges=["127.0.0.0/8"]))
    assert "::1" in half.evaluate(fetch("http://localhost/")).reasons[0]
    both = engine(layout, net=AddressPolicy.build(allow_ranges=["127.0.0.0/8", "::1/128"]))
    assert both.evaluate(fetch("http://localhost/")).decision is Decision.ASK


def test_a_web_search_backend_on_a_refused_address_is_denied(layout) -> None:
    search = PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="web_search",
        kind=ActionKind.FETCH,
        payload=WebSearchRequest(query="q", backend="searxng", url="http://127.0.0.1:8888/search"),
        read_only=True,
        summary="search",
    )
    assert engine(layout, "autonomous-trusted").evaluate(search).rule == "fetch:address_policy"


def _corpus_urls(corpus) -> list[tuple[str, bool]]:
    """``(url, needs DNS)`` for every case of the SSRF corpus the fetch must block."""
    found = []
    for line in corpus("ssrf", "ssrf_cases.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["expected"] != "block":
            continue
        kind, payload = case.get("kind"), case["payload"]
        if kind == "ip":
            found.append((f"http://[{payload}]/" if ":" in payload else f"http://{payload}/", False))
        elif kind == "ip_port":
            address, _, port = payload.rpartition(":")
            found.append((f"http://{address}:{port}/", False))
        elif kind is None:
            found.append((payload, case["requires_dns"]))
    return found


# Names the public DNS points at blocked addresses (or a redirector's public first hop): only the pinned
# fetch, which resolves and re-checks every hop, can refuse them.
_FOR_THE_PINNED_FETCH = {
    "http://localtest.me",
    "http://localh.st",
    "http://company.127.0.0.1.nip.io",
    "http://169.254.169.254.nip.io/",
    "http://make-1.2.3.4-rebind-169.254-169.254-rr.1u.ms",
    "https://307.r3dir.me/--to/?url=http://localhost",
    "https://62epax5fhvj3zzmzigyoe5ipkbn7fysllvges3a.302.r3dir.me",
}
# The source project's own denylist, not an address policy (see tests/net/test_ssrf_corpus.py).
_DELIBERATE = {"http://132.0.5.1/", "http://152.254.90.1/", "http://200.1.1.1:8080/"}


def test_every_ssrf_corpus_case_the_fetch_blocks_is_denied_before_it_runs(layout, corpus) -> None:
    policy = engine(layout, "autonomous-trusted", allow=["Fetch"])
    left: list[str] = []
    for url, _needs_dns in _corpus_urls(corpus):
        verdict = policy.evaluate(fetch(url))
        if verdict.decision is Decision.DENY:
            assert verdict.rule in ("fetch:address_policy", "fetch:invalid_url"), (url, verdict)
        else:
            left.append(url)
    assert set(left) == _FOR_THE_PINNED_FETCH | (_DELIBERATE - {"http://200.1.1.1:8080/"})
