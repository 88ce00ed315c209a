"""The blocked ranges of invariant 8, the embedded-IPv4 checks of translation prefixes, and the allowlist."""

from __future__ import annotations

import ipaddress

import pytest

from seepient.config.sections import NetSettings
from seepient.net import AddressPolicy, blocked_reason, policy_from_settings
from seepient.net.address_policy import local_name_reason
from seepient.net.special_addresses import IPV4_SPECIAL, IPV6_SPECIAL, REGISTRY_DATE, REGISTRY_SOURCE

BLOCKED = [
    "0.0.0.0", "0.1.2.3", "192.88.99.1", "10.0.0.1", "100.64.0.1", "100.100.100.200", "127.0.0.1", "127.255.255.254",
    "169.254.169.254", "169.254.170.2", "172.16.0.1", "172.31.255.255", "192.0.0.192", "192.0.2.1",
    "192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9", "224.0.0.1",
    "239.255.255.250", "240.0.0.1", "255.255.255.255",
    "::", "::1", "fe80::1", "fec0::1", "fc00::1", "fd00:ec2::254", "ff02::1", "::ffff:8.8.8.8",
    "::ffff:127.0.0.1", "::127.0.0.1", "2001:db8::1", "3fff::1", "100::1", "2001:2::1",
    # Translation prefixes that deliver to a blocked IPv4 address.
    "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "64:ff9b:1::a9fe:a9fe", "64:ff9b:1:a9fe:a9:fe00::",
    "2002:7f00:1::", "2002:a9fe:a9fe::1", "2002:c0a8:ffff::",
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo whose client is 127.0.0.1 (bits inverted)
    "2001:0:a9fe:a9fe::1",  # Teredo whose server is 169.254.169.254
    # Special-purpose blocks the old list called public (IANA registries, see net/special_addresses.py).
    "::ffff:0:7f00:1", "::ffff:0:a9fe:a9fe", "::ffff:0:808:808", "2001:20::1", "2001:2f:ffff::1", "2001:10::1",
    "5f00::1", "5f00:ffff::1", "192.31.196.1", "192.175.48.6", "2620:4f:8000::1", "2001:4:112::1", "192.0.0.9",
    "192.0.0.10", "192.0.0.170", "192.52.193.1", "2001:3::1", "2001:1::1", "2001:1::2", "2001:1::3",
    "100:0:0:1::1", "2001:30::1", "192.88.99.2", "2001:5::1", "2001:1ff::1",
    # IPv6 outside 2000::/3 is allocated to nothing routable.
    "4000::1", "1::1", "::2:3:4", "8000::1", "e000::1",
    # ISATAP interface ids carry the IPv4 address of the host behind the router, u/g bits either way.
    "2a00:1450::200:5efe:a9fe:a9fe", "2a00:1450::5efe:c0a8:101", "2a00:1450::300:5efe:a00:1",
    # Every placement of RFC 6052 inside the local-use NAT64 prefix.
    "64:ff9b:1:7f00:0:100::", "64:ff9b:1::7f:0:1:0",
]  # fmt: skip

ALLOWED = [
    "8.8.8.8", "1.1.1.1", "93.184.216.34", "144.1.1.1", "100.63.255.255", "100.128.0.0", "172.32.0.1",
    "198.20.0.1", "2606:4700::1111", "2607:f8b0:400a:807::200e", "64:ff9b::808:808", "2002:808:808::1",
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # Teredo: server 65.54.227.120, client 8.8.8.8
    "2a00:1450::200:5efe:808:808",  # ISATAP with a public IPv4 address
    "2001:200::1", "2c0f:f248::1", "3ffe:831f::1",
]  # fmt: skip


@pytest.mark.parametrize("address", BLOCKED)
def test_blocked_ranges(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is None


def test_embedded_address_is_named_in_the_reason() -> None:
    reason = blocked_reason(ipaddress.ip_address("2002:a9fe:a9fe::1"))
    assert reason is not None and "169.254.169.254" in reason and "6to4" in reason


def test_allowlist_is_explicit_and_narrow() -> None:
    policy = AddressPolicy.build(
        allow_hosts=["*.corp.example", "Wiki.Internal."], allow_ranges=["10.1.0.0/16"]
    )
    ten = ipaddress.ip_address("10.1.2.3")
    assert policy.address_reason(ten) is None
    assert policy.address_reason(ipaddress.ip_address("10.2.0.1")) is not None
    metadata = ipaddress.ip_address("169.254.169.254")
    assert policy.address_reason(metadata, "api.corp.example") is None
    assert policy.address_reason(metadata, "corp.example") is not None  # *. means subdomains only
    assert policy.address_reason(metadata, "evilcorp.example") is not None
    assert policy.address_reason(metadata, "wiki.internal") is None
    assert AddressPolicy().address_reason(ipaddress.ip_address("127.0.0.1")) is not None


def test_ports() -> None:
    assert AddressPolicy().port_reason(443) is None and AddressPolicy().port_reason(80) is None
    assert "net.allowPorts" in (AddressPolicy().port_reason(8080) or "")
    assert AddressPolicy.build(allow_ports=[8080]).port_reason(8080) is None


def test_settings_section_builds_the_policy_and_rejects_bad_entries() -> None:
    settings = NetSettings.model_validate(
        {"allowHosts": ["git.corp"], "allowRanges": ["192.168.5.0/24"], "allowPorts": [8443]}
    )
    policy = policy_from_settings(settings)
    assert policy.allow_ports == frozenset({8443}) and policy.host_allowlisted("git.corp")
    with pytest.raises(ValueError, match="allowRanges entry 'not-a-range'"):
        policy_from_settings(NetSettings.model_validate({"allowRanges": ["not-a-range"]}))
    with pytest.raises(ValueError, match="allowHosts entry"):
        policy_from_settings(NetSettings.model_validate({"allowHosts": ["http://x/"]}))


def test_every_registry_block_is_refused_at_its_edges_and_middle() -> None:
    """Each block of the vendored registries: its first, middle and last address are refused, except the
    translation prefixes, which are judged by the IPv4 address inside them."""
    for block in (*IPV4_SPECIAL, *IPV6_SPECIAL):
        network = block.network
        samples = {network[0], network[-1], network[network.num_addresses // 2]}
        for address in samples:
            if block.embeds_ipv4:
                continue
            reason = blocked_reason(address)
            assert reason is not None, (block.name, address)


def test_translation_prefixes_are_judged_by_their_ipv4_address() -> None:
    public, private = ipaddress.IPv4Address("8.8.8.8"), ipaddress.IPv4Address("10.0.0.1")
    for value, blocked in ((public, False), (private, True)):
        raw = int(value)
        nat64 = ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | raw)
        sixtofour = ipaddress.IPv6Address((0x2002 << 112) | (raw << 80) | 1)
        teredo = ipaddress.IPv6Address((0x20010000 << 96) | (int(public) << 64) | (raw ^ 0xFFFFFFFF))
        for address in (nat64, sixtofour, teredo):
            assert (blocked_reason(address) is not None) is blocked, address


def test_the_registry_names_its_source_and_date() -> None:
    assert REGISTRY_DATE == "2025-10-09"
    assert "Special-Purpose Address Registries" in REGISTRY_SOURCE
    assert len(IPV4_SPECIAL) == 26 and len(IPV6_SPECIAL) == 25
    assert all(block.network.network_address == block.network[0] for block in (*IPV4_SPECIAL, *IPV6_SPECIAL))


def test_what_this_python_calls_private_is_refused() -> None:
    """A floor, not the table: the interpreter's own list is older than the registries (3.11 knows neither
    3fff::/20 nor 5f00::/16), and Teredo is judged by its addresses instead."""
    teredo = ipaddress.IPv6Network("2001::/32")
    for network in (
        *ipaddress._IPv4Constants._private_networks,  # type: ignore[attr-defined]
        *ipaddress._IPv6Constants._private_networks,  # type: ignore[attr-defined]
    ):
        for address in (network[0], network[-1], network[network.num_addresses // 3]):
            if address.version == 6 and address in teredo:
                continue
            assert blocked_reason(address) is not None, (network, address)


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("localhost", True), ("foo.localhost", True), ("localhost.localdomain", True), ("metadata", True),
        ("printer.local", True), ("router.home.arpa", True), ("metadata.google.internal", True),
        ("wiki.corp", True), ("nas.lan", True), ("box.home", True), ("example.com", False),
        ("localhost.example.com", False), ("local.example", False), ("internal.example.org", False),
        ("127.0.0.1.nip.io", False),
    ],
)  # fmt: skip
def test_names_only_a_local_resolver_answers(host: str, local: bool) -> None:
    assert (local_name_reason(host) is not None) is local


def test_static_reason_decides_without_dns() -> None:
    policy = AddressPolicy()
    assert policy.static_reason("example.com", None, 443) is None
    assert "net.allowPorts" in (policy.static_reason("example.com", None, 25) or "")
    assert "RFC 6761" in (policy.static_reason("localhost", None, 80) or "")
    metadata = ipaddress.ip_address("169.254.169.254")
    assert "link-local" in (policy.static_reason("169.254.169.254", metadata, 80) or "")
    assert AddressPolicy.build(allow_hosts=["metadata"]).static_reason("metadata", None, 80) is None
    # An internal range opened: what a private name resolves to is for the pinned fetch to judge.
    assert AddressPolicy.build(allow_ranges=["10.0.0.0/8"]).static_reason("wiki.corp", None, 80) is None
