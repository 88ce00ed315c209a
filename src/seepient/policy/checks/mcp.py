"""The check of MCP tool calls (``mcp__SERVER__TOOL``): Mcp rules and rules naming the tool or its server,
then the consent mode, which weighs what the server claims about its tool but never trusts it."""

from __future__ import annotations

from seepient.policy.checks.decider import Decider
from seepient.policy.modes import ModeSubject
from seepient.protocol import PreparedActionDraft, Verdict
from seepient.protocol.actions import McpCall

_FAMILIES = ("Mcp",)


def check_mcp(decider: Decider, action: PreparedActionDraft) -> Verdict:
    name = action.tool
    for kind, make in (("deny", Verdict.deny), ("ask", Verdict.ask)):
        for rule in getattr(decider.rules, kind):
            if decider.applies(rule, action, _FAMILIES) and (
                rule.bare or rule.matches_mcp(name, lenient=True)
            ):
                return make(
                    f"{kind}:{rule.text}", f"a {kind} rule ({rule.source}) covers the MCP tool {name}"
                )
    for rule in decider.rules.allow:
        if decider.applies(rule, action, _FAMILIES) and (rule.bare or rule.matches_mcp(name, lenient=False)):
            return Verdict.allow(
                f"allow:{rule.text}", f"an allow rule ({rule.source}) covers the MCP tool {name}"
            )
    locked = decider.locked(lambda r: r.bare or r.matches_mcp(name, lenient=False), action, _FAMILIES)
    # What a server declares about its tool is the server's claim, not something Seepient checked (a
    # "read-only" tool may read any file the server can): it shapes the reasons a person reads, and the
    # consent mode decides as for any unchecked action; only autonomous-trusted proceeds without asking.
    call = action.payload if isinstance(action.payload, McpCall) else None
    concerns = [f"it calls the MCP tool {name}"]
    if call is not None and not call.read_only_hint:
        concerns.append(f"MCP server {call.server} does not declare {call.tool} read-only")
    elif call is not None and call.open_world_hint:
        concerns.append(f"MCP server {call.server} says {call.tool} reaches beyond its own data")
    return decider.decide(ModeSubject("other", True, concerns=concerns, description=action.summary), locked)
