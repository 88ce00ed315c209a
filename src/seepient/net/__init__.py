"""SSRF-safe fetching and filtered egress: the address policy, strict URLs, ``safe_fetch`` and the egress proxy."""

from seepient.net.address_policy import AddressPolicy, blocked_reason, policy_from_settings
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
from seepient.net.url import ParsedUrl, UrlError, parse_url

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
