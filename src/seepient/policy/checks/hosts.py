"""The hosts a URL, or the words of a network command, may reach, as Fetch rules must see them: every reading
a parser could take (``https://good.com\\@evil.com`` names both hosts), normalised."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from typing import Protocol

from seepient.policy.rules import normalise_host

_NETWORK_URL_PROGRAMS = frozenset("curl wget http https xh aria2c lynx links w3m".split())
_HOST_WORD = re.compile(r"^[A-Za-z0-9.-]+\.[A-Za-z]{2,}(?::\d+)?(?:[/?#].*)?$")
_REMOTE_WORD = re.compile(r"^(?:[^@/\s]+@)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+\.[A-Za-z]{2,})(?::|$)")


class ArgumentWord(Protocol):
    """One argv word as shell analysis gives it: its text, and whether that text is known before it runs."""

    @property
    def text(self) -> str: ...

    @property
    def static(self) -> bool: ...


def url_hosts(url: str) -> list[str]:
    """The hosts a URL may reach, normalised: as Python splits it, and as a WHATWG parser does (which reads
    ``\\`` as ``/``), so ``https://good.com\\@evil.com`` yields both readings. Empty when there is no host or
    the scheme is not http(s)."""
    hosts: list[str] = []
    for text in (url.strip(), url.strip().replace("\\", "/")):
        try:
            parts = urllib.parse.urlsplit(text)
        except ValueError:
            continue
        if parts.scheme.lower() not in ("http", "https"):
            continue
        host = _authority_host(parts.netloc)
        normal = normalise_host(host) if host else None
        if normal is not None and normal not in hosts:
            hosts.append(normal)
    return hosts


def command_hosts(program: str, arguments: Iterable[ArgumentWord]) -> tuple[list[str], bool]:
    """Hosts the arguments of a network command ``program`` name (URLs, ``curl example.com``,
    ``git@host:repo``), and whether one of them is computed at run time and might name another."""
    hosts: list[str] = []
    dynamic = False
    for word in arguments:
        if not word.static:
            dynamic = True
            continue
        text = word.text
        candidates: list[str] = []
        if "://" in text:
            candidates = url_hosts(text) or [
                h for h in [normalise_host(_authority_host(text.split("://", 1)[1].split("/", 1)[0]))] if h
            ]
        elif program in _NETWORK_URL_PROGRAMS and not text.startswith("-") and _HOST_WORD.match(text):
            candidates = url_hosts("http://" + text)
        else:
            match = _REMOTE_WORD.match(text)
            if match is not None and not text.startswith("-"):
                host = normalise_host(match.group(1))
                candidates = [host] if host else []
        hosts.extend(h for h in candidates if h not in hosts)
    return hosts, dynamic


def _authority_host(netloc: str) -> str:
    host = netloc.rpartition("@")[2]
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else ""
    return host.partition(":")[0]
