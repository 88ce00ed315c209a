"""SSRF-safe fetching and filtered egress: the address policy, strict URLs, ``safe_fetch`` and the egress proxy.

The fetching half loads the HTTP stack (and with it, where installed, trio), which the policy's address checks
never need: its names load on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seepient._lazy_exports import lazy_exports
from seepient.net.address_policy import AddressPolicy, blocked_reason, policy_from_settings
from seepient.net.url import ParsedUrl, UrlError, parse_url

if TYPE_CHECKING:
    from seepient.net.fetch import (
        FetchBlocked,
        FetchError,
        FetchResult,
        FetchTimeout,
        FetchTooLarge,
        Resolver,
        SafeFetcher,
        TooManyRedirects,
        UrlVerdict,
        check_url,
        safe_fetch,
        system_resolve,
    )

__getattr__ = lazy_exports(
    __name__,
    dict.fromkeys(
        (
            "FetchBlocked",
            "FetchError",
            "FetchResult",
            "FetchTimeout",
            "FetchTooLarge",
            "Resolver",
            "SafeFetcher",
            "TooManyRedirects",
            "UrlVerdict",
            "check_url",
            "safe_fetch",
            "system_resolve",
        ),
        "seepient.net.fetch",
    ),
)


__all__ = [
    "AddressPolicy",
    "FetchBlocked",
    "FetchError",
    "FetchResult",
    "FetchTimeout",
    "FetchTooLarge",
    "ParsedUrl",
    "Resolver",
    "SafeFetcher",
    "TooManyRedirects",
    "UrlError",
    "UrlVerdict",
    "blocked_reason",
    "check_url",
    "parse_url",
    "policy_from_settings",
    "safe_fetch",
    "system_resolve",
]
