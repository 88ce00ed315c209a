"""Which IP addresses, hosts and ports a server-side fetch may reach: the blocked ranges of DESIGN §4
invariant 8, and the explicit allowlist a user configures for internal services."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field

from seepient.config.sections import NetSettings
from seepient.net.special_addresses import IPV4_SPECIAL, IPV6_SPECIAL, SpecialBlock

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_PORTS = frozenset({80, 443})


_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
# Outside the special-purpose registries but never a web server's address either.
_EXTRA_IPV4: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (ipaddress.IPv4Network("224.0.0.0/4"), "multicast (224.0.0.0/4)"),
)
_EXTRA_IPV6: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (ipaddress.IPv6Network("::ffff:0:0:0/96"), "IPv4-translated IPv6 (::ffff:0:0:0/96, RFC 2765)"),
    (ipaddress.IPv6Network("::/96"), "IPv4-compatible IPv6 (::/96, deprecated by RFC 4291)"),
    (ipaddress.IPv6Network("fec0::/10"), "site-local (fec0::/10, deprecated by RFC 3879)"),
    (ipaddress.IPv6Network("ff00::/8"), "multicast (ff00::/8)"),
)

_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL_USE = ipaddress.IPv6Network("64:ff9b:1::/48")
_IPV4_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_ISATAP_ID = 0x00005EFE  # RFC 5214 interface id 0000:5efe (or 0200:5efe, u/g bits aside) + IPv4


def _bits(raw: int, start: int, length: int) -> int:
    """``length`` bits of a 128-bit address starting at bit ``start`` (0 is the most significant)."""
    return (raw >> (128 - start - length)) & ((1 << length) - 1)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[tuple[ipaddress.IPv4Address, str]]:
    """Every IPv4 address some IPv6 form would deliver the packet to, or that a stack reads out of it:
    IPv4-mapped, -translated and -compatible forms, NAT64 (RFC 6052, 8215), 6to4 (RFC 3056), Teredo (RFC
    4380, the client XORed) and ISATAP interface ids (RFC 5214)."""
    raw = int(address)
    low = ipaddress.IPv4Address(raw & 0xFFFFFFFF)
    found: list[tuple[ipaddress.IPv4Address, str]] = []
    if address in _IPV4_MAPPED:
        found.append((low, "IPv4-mapped ::ffff:0:0/96"))
    elif address in _IPV4_TRANSLATED:
        found.append((low, "IPv4-translated ::ffff:0:0:0/96"))
    elif address in _IPV4_COMPATIBLE and raw > 1:
        found.append((low, "IPv4-compatible ::/96"))
    elif address in _NAT64_WELL_KNOWN:
        found.append((low, "NAT64 64:ff9b::/96"))
    elif address in _NAT64_LOCAL_USE:
        # A local-use prefix may be /48, /56, /64 or /96 inside 64:ff9b:1::/48 (RFC 8215); RFC 6052 puts
        # the IPv4 address at a different place for each, skipping bits 64-71.
        via = "NAT64 local-use 64:ff9b:1::/48"
        placements = (
            (_bits(raw, 48, 16) << 16) | _bits(raw, 72, 16),
            (_bits(raw, 56, 8) << 24) | _bits(raw, 72, 24),
            _bits(raw, 72, 32),
            raw & 0xFFFFFFFF,
        )
        found.extend((ipaddress.IPv4Address(value), via) for value in dict.fromkeys(placements))
    if address.sixtofour is not None:
        found.append((address.sixtofour, "6to4 2002::/16"))
    if address.teredo is not None:
        server, client = address.teredo
        found += [(server, "Teredo server"), (client, "Teredo client")]
    if _bits(raw, 64, 32) & 0xFCFFFFFF == _ISATAP_ID:
        found.append((low, "an ISATAP interface id"))
    return found


def _special_block(address: IPAddress) -> SpecialBlock | None:
    """The most specific special-purpose block holding ``address``, or None."""
    table = IPV4_SPECIAL if isinstance(address, ipaddress.IPv4Address) else IPV6_SPECIAL
    best: SpecialBlock | None = None
    for block in table:
        if address in block.network and (best is None or block.network.prefixlen > best.network.prefixlen):
            best = block
    return best


def _block_reason(address: IPAddress, block: SpecialBlock) -> str:
    where = f"{block.network}, {block.rfc}"
    if block.reachability == "global":
        return (
            f"{address} is {block.describe} ({where}): a special-purpose block the IANA registry lists, "
            "never a web server's address"
        )
    if block.reachability == "terminated":
        return f"{address} is {block.describe} ({where}; the allocation is terminated)"
    return f"{address} is {block.describe} ({where}; not globally reachable)"


def blocked_reason(address: IPAddress) -> str | None:
    """Why ``address`` is refused, or None when it is publicly routable.

    Refused: every block of the IANA special-purpose registries (those marked not globally reachable, and
    the few marked reachable, which are anycast protocol servers, DNS sinks or identifiers), IPv4 and IPv6
    multicast, IPv6 outside 2000::/3, and any IPv6 form whose embedded IPv4 address is refused. The NAT64
    well-known prefix, 6to4 and Teredo are judged by the IPv4 address inside them."""
    if isinstance(address, ipaddress.IPv4Address):
        block = _special_block(address)
        if block is not None:
            return _block_reason(address, block)
        for network, why in _EXTRA_IPV4:
            if address in network:
                return f"{address} is {why}"
        return None
    if address.scope_id:
        return f"{address} carries a scope id, which only link-local addresses use"
    for embedded, via in _embedded_ipv4(address):
        inner = blocked_reason(embedded)
        if inner is not None:
            return f"{address} reaches {embedded} through {via}, and {inner}"
    block = _special_block(address)
    if block is not None:
        return None if block.embeds_ipv4 else _block_reason(address, block)
    for network, why in _EXTRA_IPV6:
        if address in network:
            return f"{address} is {why}"
    if address not in _GLOBAL_UNICAST:
        return f"{address} is outside 2000::/3, the only IPv6 space allocated for global unicast"
    return None


_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})
_LOOPBACK_ANSWERS: tuple[IPAddress, ...] = (ipaddress.IPv4Address("127.0.0.1"), ipaddress.IPv6Address("::1"))
_APPENDIX_G = "a private-use name (RFC 6762 appendix G), never delegated in the public DNS"
_PRIVATE_USE_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("local", "a multicast DNS name (RFC 6762): a machine on the local link"),
    ("home.arpa", "a home-network name (RFC 8375)"),
    ("internal", "a private-use name (.internal is reserved for private networks; metadata.google.internal)"),
    ("localdomain", "a private-use name (the hosts file's local domain)"),
    ("intranet", _APPENDIX_G),
    ("private", _APPENDIX_G),
    ("corp", _APPENDIX_G),
    ("home", _APPENDIX_G),
    ("lan", _APPENDIX_G),
)


def local_name_reason(host: str) -> str | None:
    """What makes ``host`` (normalised: lower case, no root dot) a name only a local resolver answers, or None
    for a name the public DNS may answer. Loopback names (RFC 6761) say so first."""
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return f"{host} always resolves to loopback (RFC 6761)"
    if "." not in host:
        return (
            f"{host} is a name without a dot, which the resolver completes from the local search domains or "
            "the hosts file, never the public DNS"
        )
    for suffix, why in _PRIVATE_USE_SUFFIXES:
        if host == suffix or host.endswith("." + suffix):
            return f"{host} is {why}"
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

    def static_reason(self, host: str, ip: IPAddress | None, port: int) -> str | None:
        """Why a URL's target is refused before any name is looked up (policy asks this before a fetch runs:
        resolving there would let a rebinding answer differ from the fetch's), or None when only the pinned
        fetch can tell. Refused: a port, an address literal, a loopback name, and a name only a local resolver
        answers unless ``allowRanges`` opens internal ranges (then the fetch judges the answer)."""
        problem = self.port_reason(port)
        if problem is not None:
            return problem
        if self.host_allowlisted(host):
            return None
        if ip is not None:
            return self.address_reason(ip, host)
        local = local_name_reason(host)
        if local is None:
            return None
        if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
            for address in _LOOPBACK_ANSWERS:
                problem = self.address_reason(address, host)
                if problem is not None:
                    return f"{local}, and {problem}"
            return None
        if self.allow_ranges:
            return None
        return (
            f"{local}; what it resolves to is an internal address the fetch refuses "
            "(list the host in net.allowHosts of the user settings to reach an internal service)"
        )

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
