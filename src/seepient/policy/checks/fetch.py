"""The check of fetches (web_fetch, and the backend a web search contacts): Fetch rules on every host the URL
may reach, the fetch address policy's own refusals given before anyone is asked, then the consent mode."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from seepient.net.url import UrlError, parse_url
from seepient.policy.checks.decider import Decider
from seepient.policy.checks.hosts import url_hosts
from seepient.policy.modes import ModeSubject
from seepient.policy.rules import Rule, RuleSet
from seepient.protocol import FetchRequest, PreparedActionDraft, Verdict

RULE_INVALID_URL = "fetch:invalid_url"
RULE_FETCH_REFUSED = "fetch:address_policy"
_FAMILIES = ("Fetch",)


def check_fetch(decider: Decider, action: PreparedActionDraft, fetch: FetchRequest) -> Verdict:
    rules = decider.rules
    hosts = url_hosts(fetch.url)
    if not hosts:
        return Verdict.deny(
            RULE_INVALID_URL, f"{fetch.url!r} names no host policy can check; give an http(s) URL"
        )
    shown = ", ".join(hosts)
    rule = _host_rule(decider, rules.deny, action, hosts)
    if rule is not None:
        return Verdict.deny(
            f"deny:{rule.text}", f"a deny rule ({rule.source}) covers fetching {fetch.url} (host {shown})"
        )
    refused = _fetch_refusal(decider, fetch.url)
    if refused is not None:
        return refused
    rule = _host_rule(decider, rules.ask, action, hosts)
    if rule is not None:
        return Verdict.ask(
            f"ask:{rule.text}", f"an ask rule ({rule.source}) covers fetching {fetch.url} (host {shown})"
        )
    # Every reading of the URL must be allowed: a parser disagreement must not open a host.
    for rule in rules.allow:
        if decider.applies(rule, action, _FAMILIES) and (
            rule.bare or all(rule.matches_host(h, lenient=False) for h in hosts)
        ):
            return Verdict.allow(
                f"allow:{rule.text}", f"an allow rule ({rule.source}) covers fetching {fetch.url}"
            )
    locked = decider.locked(
        lambda r: r.bare or all(r.matches_host(h, lenient=False) for h in hosts), action, _FAMILIES
    )
    return decider.decide(
        ModeSubject("fetch", False, concerns=[f"it fetches {fetch.url} from the network"]), locked
    )


def refused_host(rules: RuleSet, host: str) -> str | None:
    """Why a Fetch deny rule refuses ``host``, or None."""
    for rule in rules.deny:
        if rule.tool == "Fetch" and (rule.bare or rule.matches_host(host, lenient=True)):
            return f"a deny rule ({rule.source}: {rule.text}) covers {host}"
    return None


def _host_rule(
    decider: Decider, rules: Iterable[Rule], action: PreparedActionDraft, hosts: Sequence[str]
) -> Rule | None:
    return next(
        (
            rule
            for rule in rules
            if decider.applies(rule, action, _FAMILIES)
            and (rule.bare or any(rule.matches_host(h, lenient=True) for h in hosts))
        ),
        None,
    )


def _fetch_refusal(decider: Decider, url: str) -> Verdict | None:
    """The fetch layer's own refusal, given before anyone is asked: a URL its strict parser rejects, a
    port, an address literal or a name that always resolves locally (no DNS here: a rebinding answer
    could differ from the one the pinned fetch gets). Other names are left to the pinned fetch."""
    try:
        parsed = parse_url(url)
    except UrlError as exc:
        return Verdict.deny(RULE_INVALID_URL, f"the fetch would refuse {url!r}: {exc}")
    problem = decider.net_policy.static_reason(parsed.host, parsed.ip, parsed.port)
    if problem is None:
        return None
    return Verdict.deny(
        RULE_FETCH_REFUSED,
        f"the fetch address policy refuses {parsed.geturl()}: {problem}",
        "no rule, grant or mode can open it; internal services are reached only through net.allowHosts, "
        "net.allowRanges and net.allowPorts in the user, managed or --config settings",
    )
