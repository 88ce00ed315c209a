"""The IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890, RFC 8190) as data: every block, its
registry name, the RFC that asked for it and whether the registry calls it globally reachable.

Source: IANA, "IANA IPv4 Special-Purpose Address Registry" (iana-ipv4-special-registry) and "IANA IPv6
Special-Purpose Address Registry" (iana-ipv6-special-registry), read as they stood in October 2025: the IPv6
registry was last updated 2025-10-09 (its newest block 100:0:0:1::/64, RFC 9780, allocated 2025-04); the
newest IPv4 block is 192.0.0.10/32 (RFC 8155, 2017-02). Each row was written out here by hand from the
registry's columns; ``describe`` is Seepient's own wording of what an address there is, shown in refusals.
When IANA adds a block, add its row (and a test naming an address in it).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

REGISTRY_DATE = "2025-10-09"
REGISTRY_SOURCE = (
    "IANA IPv4 and IPv6 Special-Purpose Address Registries (iana-ipv4-special-registry, "
    "iana-ipv6-special-registry)"
)

Reachability = Literal["global", "not-global", "depends", "terminated"]
"""The registry's "Globally Reachable" column: True, False, N/A (it depends on the IPv4 address embedded in
the IPv6 one: Teredo, 6to4) or an empty row for a terminated allocation."""


@dataclass(frozen=True)
class SpecialBlock:
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    name: str
    rfc: str
    reachability: Reachability
    describe: str

    @property
    def embeds_ipv4(self) -> bool:
        """A translation prefix whose destination is the IPv4 address inside it (NAT64, 6to4, Teredo)."""
        return self.network in _TRANSLATION_PREFIXES


def _block(cidr: str, name: str, rfc: str, reachability: Reachability, describe: str) -> SpecialBlock:
    return SpecialBlock(ipaddress.ip_network(cidr), name, rfc, reachability, describe)


IPV4_SPECIAL: tuple[SpecialBlock, ...] = (
    _block("0.0.0.0/8", '"This network"', "RFC 791", "not-global", "'this network'"),
    _block("0.0.0.0/32", '"This host on this network"', "RFC 1122", "not-global", "'this host'"),
    _block("10.0.0.0/8", "Private-Use", "RFC 1918", "not-global", "private"),
    _block(
        "100.64.0.0/10",
        "Shared Address Space",
        "RFC 6598",
        "not-global",
        "carrier-grade NAT shared space, where some clouds put metadata services",
    ),
    _block("127.0.0.0/8", "Loopback", "RFC 1122", "not-global", "loopback"),
    _block(
        "169.254.0.0/16",
        "Link Local",
        "RFC 3927",
        "not-global",
        "link-local, where cloud metadata services live (169.254.169.254)",
    ),
    _block("172.16.0.0/12", "Private-Use", "RFC 1918", "not-global", "private"),
    _block(
        "192.0.0.0/24",
        "IETF Protocol Assignments",
        "RFC 6890",
        "not-global",
        "an IETF protocol assignment (incl. Oracle metadata 192.0.0.192)",
    ),
    _block(
        "192.0.0.0/29",
        "IPv4 Service Continuity Prefix",
        "RFC 7335",
        "not-global",
        "DS-Lite service continuity",
    ),
    _block("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", "not-global", "the IPv4 dummy address"),
    _block(
        "192.0.0.9/32",
        "Port Control Protocol Anycast",
        "RFC 7723",
        "global",
        "the PCP anycast server address",
    ),
    _block(
        "192.0.0.10/32",
        "Traversal Using Relays around NAT Anycast",
        "RFC 8155",
        "global",
        "the TURN anycast server address",
    ),
    _block(
        "192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880", "not-global", "the NAT64 discovery address"
    ),
    _block(
        "192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880", "not-global", "the NAT64 discovery address"
    ),
    _block(
        "192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", "not-global", "documentation (TEST-NET-1)"
    ),
    _block(
        "192.31.196.0/24",
        "AS112-v4",
        "RFC 7535",
        "global",
        "the AS112 DNS sink (reverse lookups of private space)",
    ),
    _block("192.52.193.0/24", "AMT", "RFC 7450", "global", "the AMT multicast-tunnelling anycast range"),
    _block(
        "192.88.99.0/24",
        "Deprecated (6to4 Relay Anycast)",
        "RFC 7526",
        "terminated",
        "the deprecated 6to4 relay anycast range",
    ),
    _block(
        "192.88.99.2/32",
        "6a44-relay anycast address",
        "RFC 6751",
        "not-global",
        "the 6a44 relay anycast address",
    ),
    _block("192.168.0.0/16", "Private-Use", "RFC 1918", "not-global", "private"),
    _block(
        "192.175.48.0/24",
        "Direct Delegation AS112 Service",
        "RFC 7534",
        "global",
        "the AS112 DNS sink (direct delegation)",
    ),
    _block("198.18.0.0/15", "Benchmarking", "RFC 2544", "not-global", "benchmarking"),
    _block(
        "198.51.100.0/24",
        "Documentation (TEST-NET-2)",
        "RFC 5737",
        "not-global",
        "documentation (TEST-NET-2)",
    ),
    _block(
        "203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", "not-global", "documentation (TEST-NET-3)"
    ),
    _block("240.0.0.0/4", "Reserved", "RFC 1112", "not-global", "reserved"),
    _block(
        "255.255.255.255/32", "Limited Broadcast", "RFC 919", "not-global", "the limited broadcast address"
    ),
)

IPV6_SPECIAL: tuple[SpecialBlock, ...] = (
    _block("::1/128", "Loopback Address", "RFC 4291", "not-global", "loopback"),
    _block("::/128", "Unspecified Address", "RFC 4291", "not-global", "unspecified"),
    _block("::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", "not-global", "IPv4-mapped IPv6"),
    _block("64:ff9b::/96", "IPv4-IPv6 Translat.", "RFC 6052", "global", "the NAT64 well-known prefix"),
    _block("64:ff9b:1::/48", "IPv4-IPv6 Translat.", "RFC 8215", "not-global", "the NAT64 local-use prefix"),
    _block("100::/64", "Discard-Only Address Block", "RFC 6666", "not-global", "discard-only"),
    _block("100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780", "not-global", "the dummy IPv6 prefix"),
    _block("2001::/23", "IETF Protocol Assignments", "RFC 2928", "not-global", "an IETF protocol assignment"),
    _block("2001::/32", "TEREDO", "RFC 4380", "depends", "Teredo"),
    _block(
        "2001:1::1/128",
        "Port Control Protocol Anycast",
        "RFC 7723",
        "global",
        "the PCP anycast server address",
    ),
    _block(
        "2001:1::2/128",
        "Traversal Using Relays around NAT Anycast",
        "RFC 8155",
        "global",
        "the TURN anycast server address",
    ),
    _block(
        "2001:1::3/128",
        "DNS-SD Service Registration Protocol Anycast",
        "RFC 9665",
        "global",
        "the DNS-SD registration anycast address",
    ),
    _block("2001:2::/48", "Benchmarking", "RFC 5180", "not-global", "benchmarking"),
    _block("2001:3::/32", "AMT", "RFC 7450", "global", "the AMT multicast-tunnelling anycast range"),
    _block("2001:4:112::/48", "AS112-v6", "RFC 7535", "global", "the AS112 DNS sink"),
    _block(
        "2001:10::/28",
        "Deprecated (previously ORCHID)",
        "RFC 4843",
        "terminated",
        "the deprecated ORCHID range (an identifier, not a locator)",
    ),
    _block(
        "2001:20::/28",
        "ORCHIDv2",
        "RFC 7343",
        "global",
        "ORCHIDv2 (a cryptographic identifier, not a locator)",
    ),
    _block(
        "2001:30::/28",
        "Drone Remote ID Protocol Entity Tags (DETs) Prefix",
        "RFC 9374",
        "global",
        "a drone remote-ID entity tag (an identifier, not a locator)",
    ),
    _block("2001:db8::/32", "Documentation", "RFC 3849", "not-global", "documentation"),
    _block("2002::/16", "6to4", "RFC 3056", "depends", "6to4"),
    _block(
        "2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534", "global", "the AS112 DNS sink"
    ),
    _block("3fff::/20", "Documentation", "RFC 9637", "not-global", "documentation"),
    _block(
        "5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602", "not-global", "an SRv6 segment identifier"
    ),
    _block(
        "fc00::/7",
        "Unique-Local",
        "RFC 4193",
        "not-global",
        "unique-local (incl. AWS metadata fd00:ec2::254)",
    ),
    _block("fe80::/10", "Link-Local Unicast", "RFC 4291", "not-global", "link-local"),
)

_TRANSLATION_PREFIXES = frozenset(
    ipaddress.ip_network(cidr) for cidr in ("64:ff9b::/96", "2002::/16", "2001::/32")
)
