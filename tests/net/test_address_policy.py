"""The blocked ranges of invariant 8, the embedded-IPv4 checks of translation prefixes, and the allowlist."""

from __future__ import annotations

import ipaddress

import pytest

from seepient.config.settings import NetSettings
from seepient.net import AddressPolicy, blocked_reason, policy_from_settings

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
]  # fmt: skip

ALLOWED = [
    "8.8.8.8", "1.1.1.1", "93.184.216.34", "144.1.1.1", "100.63.255.255", "100.128.0.0", "172.32.0.1",
    "198.20.0.1", "2606:4700::1111", "2607:f8b0:400a:807::200e", "64:ff9b::808:808", "2002:808:808::1",
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # Teredo: server 65.54.227.120, client 8.8.8.8
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
