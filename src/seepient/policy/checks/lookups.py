"""The check of read-only look-ups beyond the workspace: ``knowledge_search`` (the index the user built) and
``web_search`` (whose backend is what gets contacted, so it is judged as a fetch of the backend's URL)."""

from __future__ import annotations

from seepient.policy.checks.decider import Decider
from seepient.policy.checks.fetch import check_fetch
from seepient.policy.modes import ModeSubject
from seepient.protocol import FetchRequest, PreparedActionDraft, Verdict
from seepient.protocol.actions import KnowledgeQuery, WebSearchRequest


def check_knowledge(decider: Decider, action: PreparedActionDraft, query: KnowledgeQuery) -> Verdict:
    """A search of the index the user built: a read of what the user chose to index, so reads' mode applies."""
    what = f"searching the knowledge index for {query.query!r}"
    decided = decider.tool_verdict(action, ("deny", "ask"), what) or decider.tool_allow(action, what)
    if decided is not None:
        return decided
    return decider.decide(ModeSubject("read", True, description=what))


def check_web_search(decider: Decider, action: PreparedActionDraft, request: WebSearchRequest) -> Verdict:
    """Fetch rules for the backend's host apply, as for web_fetch; the query is not policy's to judge."""
    return check_fetch(decider, action, FetchRequest(url=request.url))
