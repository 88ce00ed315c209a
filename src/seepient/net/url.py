"""Strict URL parsing for server-side fetches: one parser decides what host is checked and what host is
contacted, so no parser disagreement (WHATWG vs RFC 3986, backslashes, userinfo tricks) can split them."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

import idna

from seepient.net.address_policy import IPAddress
from seepient.protocol.errors import InvalidInputError

_SCHEME_PORTS = {"http": 80, "https": 443}
_FORBIDDEN_CHARS = re.compile(r"[\x00-\x20\x7f\\]")
_LABEL_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]*|[0-9]+)$")
_HOST_CHARS = re.compile(r"^[a-z0-9.-]+$")


class UrlError(InvalidInputError, ValueError):
    """A URL that cannot be fetched safely; the message says which part is wrong."""


@dataclass(frozen=True)
class ParsedUrl:
    """A validated http(s) URL. ``host`` is ASCII (IDNA applied, IPv4 normalised to dotted quad, IPv6
    without brackets); ``ip`` is set when the host is an address literal."""

    scheme: str
    host: str
    port: int
    target: str
    ip: IPAddress | None = None

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _SCHEME_PORTS[self.scheme] else f"{host}:{self.port}"

    def geturl(self) -> str:
        return f"{self.scheme}://{self.netloc}{self.target}"

    def __str__(self) -> str:
        return self.geturl()


def _legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The address behind inet_aton forms (``2130706433``, ``0x7f.1``, ``0177.0.0.1``, ``127.1``), as the
    WHATWG URL standard and libc read them; None when the host is a name. A host whose last label is
    numeric but does not parse is refused, as browsers do."""
    labels = host.split(".")
    if not _LABEL_NUMBER.match(labels[-1]):
        return None
    if len(labels) > 4:
        raise UrlError(f"host {host!r} looks like an IPv4 address but has more than four parts")
    numbers = []
    for label in labels:
        if not _LABEL_NUMBER.match(label):
            raise UrlError(f"host {host!r} mixes numeric and non-numeric parts")
        try:
            if label[:2] in ("0x", "0X"):
                numbers.append(int(label[2:] or "0", 16))
            elif len(label) > 1 and label.startswith("0"):
                numbers.append(int(label, 8))
            else:
                numbers.append(int(label, 10))
        except ValueError:
            raise UrlError(f"host {host!r} has a part that is not a valid number") from None
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        raise UrlError(f"host {host!r} is out of range for an IPv4 address")
    value = last
    for index, number in enumerate(leading):
        value |= number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


_PLAIN_NAME = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*$")


def _normalise_name(raw: str) -> str:
    lowered = raw.lower()
    if raw.isascii() and _PLAIN_NAME.match(lowered) and "xn--" not in lowered and len(lowered) <= 253:
        # Plain letters-digits-hyphens: IDNA processing would only lowercase it, and skipping it keeps
        # checking cheap on every hop. Punycode labels still go through full validation below.
        return lowered
    try:
        ascii_host = idna.encode(raw, uts46=True, transitional=False).decode("ascii")
    except idna.IDNAError as exc:
        raise UrlError(f"host {raw!r} is not a valid internationalised domain name ({exc})") from None
    except UnicodeError as exc:
        raise UrlError(f"host {raw!r} cannot be encoded ({exc})") from None
    ascii_host = ascii_host.lower()
    if not _HOST_CHARS.match(ascii_host) or ".." in ascii_host or ascii_host.startswith("."):
        raise UrlError(f"host {raw!r} contains characters a host name cannot have")
    return ascii_host


def _ipv6_host(text: str, raw: str, expected: str) -> tuple[str, IPAddress]:
    try:
        v6 = ipaddress.IPv6Address(text)
    except ValueError:
        raise UrlError(f"host {raw!r} is not {expected}") from None
    return str(v6), v6


def parse_host(raw: str) -> tuple[str, IPAddress | None]:
    """Normalise one host (name or address literal, IPv6 in brackets or not)."""
    if not raw:
        raise UrlError("the URL has no host")
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise UrlError(f"host {raw!r} opens an IPv6 bracket it does not close")
        inner = raw[1:-1]
        if "%" in inner:
            raise UrlError(f"host {raw!r} carries a zone id; link-local addresses cannot be fetched")
        return _ipv6_host(inner, raw, "a valid IPv6 address")
    if ":" in raw:
        return _ipv6_host(raw, raw, "a valid host")
    if "%" in raw:
        raise UrlError(f"host {raw!r} is percent-encoded; write the host plainly")
    name = raw[:-1] if raw.endswith(".") else raw
    if not name:
        raise UrlError("the URL has no host")
    ascii_host = _normalise_name(name)
    v4 = _legacy_ipv4(ascii_host)
    if v4 is not None:
        return str(v4), v4
    return ascii_host, None


def parse_url(url: str) -> ParsedUrl:
    """Parse ``url`` strictly; raises ``UrlError`` saying what is wrong and what is accepted."""
    if not isinstance(url, str) or not url:
        raise UrlError("no URL given")
    bad = _FORBIDDEN_CHARS.search(url)
    if bad is not None:
        what = (
            "a backslash" if bad.group() == "\\" else f"whitespace or a control character ({bad.group()!r})"
        )
        raise UrlError(f"the URL contains {what}; percent-encode it or remove it")
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep and url.split(":", 1)[0].lower() in _SCHEME_PORTS:
        raise UrlError("the URL must start with http:// or https:// followed by the host")
    if not sep or scheme not in _SCHEME_PORTS:
        shown = scheme if sep else url.split(":", 1)[0].lower()
        raise UrlError(f"scheme {shown!r} is not allowed; only http:// and https:// URLs can be fetched")
    end = len(rest)
    for mark in "/?#":
        at = rest.find(mark)
        if at != -1:
            end = min(end, at)
    authority, remainder = rest[:end], rest[end:]
    if "@" in authority:
        raise UrlError("the URL carries user credentials (user@host); remove them, they are never sent")
    if authority.startswith("["):
        close = authority.find("]")
        host_part, port_part = authority[: close + 1], authority[close + 1 :]
        if close == -1 or (port_part and not port_part.startswith(":")):
            raise UrlError(f"authority {authority!r} is not a valid [IPv6]:port")
        port_text = port_part[1:] if port_part else None
    else:
        host_part, colon, port_text_raw = authority.partition(":")
        if colon and ":" in port_text_raw:
            raise UrlError(f"authority {authority!r} has more than one ':'")
        port_text = port_text_raw if colon else None
    if port_text is not None:
        if not port_text.isdigit() or not port_text.isascii() or not 0 < int(port_text) < 65536:
            raise UrlError(f"port {port_text!r} is not a number from 1 to 65535")
        port = int(port_text)
    else:
        port = _SCHEME_PORTS[scheme]
    host, ip = parse_host(host_part)
    path_and_query = remainder.split("#", 1)[0]
    if not path_and_query.startswith("/"):
        path_and_query = "/" + path_and_query
    return ParsedUrl(scheme=scheme, host=host, port=port, target=path_and_query, ip=ip)


def join_url(base: ParsedUrl, location: str) -> ParsedUrl:
    """Resolve a redirect's ``Location`` against ``base`` (RFC 3986 §5) and parse the result strictly."""
    location = location.strip()
    if location.startswith("//"):
        return parse_url(f"{base.scheme}:{location}")
    if "://" in location.split("?", 1)[0].split("#", 1)[0] or re.match(
        r"^[A-Za-z][A-Za-z0-9+.-]*:", location
    ):
        return parse_url(location)
    base_path, _, _ = base.target.partition("?")
    if location.startswith("/"):
        target = location
    elif location.startswith("?"):
        target = base_path + location
    elif location.startswith("#") or not location:
        target = base.target
    else:
        directory = base_path.rsplit("/", 1)[0]
        target = f"{directory}/{location}"
    return parse_url(f"{base.scheme}://{base.netloc}{_remove_dot_segments(target)}")


def _remove_dot_segments(target: str) -> str:
    path, qmark, query = target.partition("?")
    output: list[str] = []
    for segment in path.split("/")[1:]:
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if path.endswith(("/.", "/..")):
        output.append("")
    return "/" + "/".join(output) + (qmark + query)
