"""Which IP addresses, hosts and ports a server-side fetch may reach: the blocked ranges of DESIGN §4
invariant 8, and the explicit allowlist a user configures for internal services."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field

from seepient.config.settings import NetSettings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_PORTS = frozenset({80, 443})


def _v4(cidr: str, why: str) -> tuple[ipaddress.IPv4Network, str]:
    return ipaddress.IPv4Network(cidr), why


def _v6(cidr: str, why: str) -> tuple[ipaddress.IPv6Network, str]:
    return ipaddress.IPv6Network(cidr), why


BLOCKED_IPV4: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    _v4("0.0.0.0/8", "'this network' (0.0.0.0/8)"),
    _v4("10.0.0.0/8", "private (RFC 1918)"),
    _v4("100.64.0.0/10", "carrier-grade NAT (100.64.0.0/10), where some clouds put metadata services"),
    _v4("127.0.0.0/8", "loopback"),
    _v4("169.254.0.0/16", "link-local, where cloud metadata services live (169.254.169.254)"),
    _v4("172.16.0.0/12", "private (RFC 1918)"),
    _v4("192.0.0.0/24", "IETF protocol assignments (192.0.0.0/24, incl. Oracle metadata 192.0.0.192)"),
    _v4("192.0.2.0/24", "documentation (TEST-NET-1)"),
    _v4("192.88.99.0/24", "reserved (the deprecated 6to4 relay anycast range, RFC 7526)"),
    _v4("192.168.0.0/16", "private (RFC 1918)"),
    _v4("198.18.0.0/15", "benchmarking (198.18.0.0/15)"),
    _v4("198.51.100.0/24", "documentation (TEST-NET-2)"),
    _v4("203.0.113.0/24", "documentation (TEST-NET-3)"),
    _v4("224.0.0.0/4", "multicast"),
    _v4("240.0.0.0/4", "reserved (240.0.0.0/4, incl. broadcast 255.255.255.255)"),
)

BLOCKED_IPV6: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    _v6("::/128", "unspecified (::)"),
    _v6("::1/128", "loopback (::1)"),
    _v6("::ffff:0:0/96", "IPv4-mapped IPv6"),
    _v6("::/96", "IPv4-compatible IPv6"),
    _v6("100::/64", "discard-only (100::/64)"),
    _v6("2001:2::/48", "benchmarking (2001:2::/48)"),
    _v6("2001:db8::/32", "documentation (2001:db8::/32)"),
    _v6("3fff::/20", "documentation (3fff::/20)"),
    _v6("fc00::/7", "unique-local (fc00::/7, incl. AWS metadata fd00:ec2::254)"),
    _v6("fe80::/10", "link-local (fe80::/10)"),
    _v6("fec0::/10", "site-local (fec0::/10)"),
    _v6("ff00::/8", "multicast"),
)

_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL_USE = ipaddress.IPv6Network("64:ff9b:1::/48")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_TEREDO = ipaddress.IPv6Network("2001::/32")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[tuple[ipaddress.IPv4Address, str]]:
    """The IPv4 addresses a translation prefix would deliver the packet to (RFC 6052, 3056, 4380)."""
    raw = int(address)
    found: list[tuple[ipaddress.IPv4Address, str]] = []
    if address in _NAT64_WELL_KNOWN:
        found.append((ipaddress.IPv4Address(raw & 0xFFFFFFFF), "NAT64 64:ff9b::/96"))
    elif address in _NAT64_LOCAL_USE:
        # A local-use prefix may be any length up to /96 inside 64:ff9b:1::/48 (RFC 8215), so every
        # placement RFC 6052 allows is checked: /96 (last 32 bits) and /48 (bits 48-63 and 72-87).
        found.append((ipaddress.IPv4Address(raw & 0xFFFFFFFF), "NAT64 local-use 64:ff9b:1::/48"))
        high = (raw >> 64) & 0xFFFF
        low = (raw >> 40) & 0xFFFF
        found.append((ipaddress.IPv4Address((high << 16) | low), "NAT64 local-use 64:ff9b:1::/48"))
    if address in _SIX_TO_FOUR and address.sixtofour is not None:
        found.append((address.sixtofour, "6to4 2002::/16"))
    if address in _TEREDO and address.teredo is not None:
        server, client = address.teredo
        found += [(server, "Teredo server"), (client, "Teredo client")]
    return found


def blocked_reason(address: IPAddress) -> str | None:
    """Why ``address`` is in a blocked range, or None when it is publicly routable."""
    if isinstance(address, ipaddress.IPv4Address):
        for network, why in BLOCKED_IPV4:
            if address in network:
                return f"{address} is {why}"
        return None
    if address.scope_id:
        return f"{address} carries a scope id, which only link-local addresses use"
    for network, why in BLOCKED_IPV6:
        if address in network:
            return f"{address} is {why}"
    for embedded, via in _embedded_ipv4(address):
        inner = blocked_reason(embedded)
        if inner is not None:
            return f"{address} reaches {embedded} through {via}, and {inner}"
    return None


def _host_matches(pattern: str, host: str) -> bool:
    if pattern.startswith("*."):
        suffix = pattern[1:]
        return host.endswith(suffix) and len(host) > len(suffix)
    return host == pattern


@dataclass(frozen=True)
class AddressPolicy:
    """The blocked ranges plus an explicit allowlist. Defaults block every range of invariant 8 and every
    port but 80 and 443."""

    allow_hosts: tuple[str, ...] = ()
    allow_ranges: tuple[IPNetwork, ...] = ()
    allow_ports: frozenset[int] = field(default_factory=frozenset)

    @classmethod
    def build(
        cls,
        *,
        allow_hosts: Iterable[str] = (),
        allow_ranges: Iterable[str] = (),
        allow_ports: Iterable[int] = (),
    ) -> AddressPolicy:
        """A policy from settings-shaped values; raises ``ValueError`` naming a bad entry."""
        hosts = []
        for host in allow_hosts:
            cleaned = host.strip().lower().rstrip(".")
            bare = cleaned.removeprefix("*.")
            if not bare or any(ch in bare for ch in "/:@*\\ "):
                raise ValueError(
                    f"net.allowHosts entry {host!r} is not a host name (use example.com or *.example.com)"
                )
            hosts.append(cleaned)
        ranges: list[IPNetwork] = []
        for cidr in allow_ranges:
            try:
                ranges.append(ipaddress.ip_network(cidr.strip(), strict=False))
            except ValueError as exc:
                raise ValueError(f"net.allowRanges entry {cidr!r} is not a CIDR range ({exc})") from None
        ports = []
        for port in allow_ports:
            if not isinstance(port, int) or not 0 < port < 65536:
                raise ValueError(f"net.allowPorts entry {port!r} is not a port number (1-65535)")
            ports.append(port)
        return cls(tuple(hosts), tuple(ranges), frozenset(ports))

    def host_allowlisted(self, host: str) -> bool:
        return any(_host_matches(pattern, host) for pattern in self.allow_hosts)

    def port_reason(self, port: int) -> str | None:
        """Why ``port`` is refused, or None."""
        if port in DEFAULT_PORTS or port in self.allow_ports:
            return None
        return f"port {port} is not 80 or 443; allow it explicitly with net.allowPorts"

    def address_reason(self, address: IPAddress, host: str | None = None) -> str | None:
        """Why connecting to ``address`` (for ``host``) is refused, or None when it is allowed."""
        if host is not None and self.host_allowlisted(host):
            return None
        if any(address.version == net.version and address in net for net in self.allow_ranges):
            return None
        return blocked_reason(address)


def policy_from_settings(net: NetSettings) -> AddressPolicy:
    """The address policy the ``net`` settings section describes; raises ``ValueError`` on a bad entry."""
    return AddressPolicy.build(
        allow_hosts=net.allow_hosts, allow_ranges=net.allow_ranges, allow_ports=net.allow_ports
    )
