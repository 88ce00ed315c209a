"""The approval broker: routes each ask to a standing grant, the ``-y`` flag, a person, or a headless refusal.

Every answer is bound to the action's digest; an answer for another digest is treated as a rejection, so an
action that changed after the prompt was shown cannot ride on the old approval. Answers beyond "once" are
taken only as the broker offered them (``ApprovalRequest.scopes`` and ``project_rule``), never as an
approver names them, and only for asks of the consent mode (see ``scopes.once_only_reason``). A session
refusal (``reject_session``) is the other way round: it may refuse any later ask its scope covers, since
refusing never loosens anything, and it outranks every grant.
"""

from __future__ import annotations

import asyncio
import hmac
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from seepient.approval.project_settings import ProjectSettingsError, add_allow_rule
from seepient.approval.scopes import (
    Offer,
    ScopeFinder,
    SessionGrant,
    grant_for,
    grant_for_rule,
    once_only_reason,
)
from seepient.protocol import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalResponse,
    ApprovalScope,
    Decision,
    PreparedActionDraft,
    Verdict,
)


class Approver(Protocol):
    """A person (or a script standing in for one) who answers approval requests."""

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse: ...


# Requests are resolved right after they are issued; an ask answered by a grant or by auto mode's
# classifier never comes back, so only the latest few are kept.
_ISSUED_KEPT = 64

HEADLESS_REASON = (
    "this action needs approval and no one can answer here (no terminal on stdin): "
    "rerun with -y/--yes to approve what policy would ask about, add an allow rule to the settings, "
    "or run in a terminal"
)


def policy_asked(verdict: Verdict) -> str:
    """The rule that asked for approval and why, in one line."""
    reasons = "; ".join(verdict.reasons) or "no reason given"
    return f"policy asked ({verdict.rule or 'no rule named'}): {reasons}"


class ApprovalBroker:
    """Answers an ``ask`` verdict: a session grant, the ``-y`` flag, the approver, or a headless refusal.

    ``auto_approve`` is the ``-y`` flag: it answers asks only; deny verdicts never reach the broker (and are
    refused if they do). With neither an approver nor ``auto_approve`` the run is headless and refuses at
    once. Without ``scopes`` only exact-digest session grants are offered; without ``project_settings``
    "always for this project" is not offered.
    """

    def __init__(
        self,
        approver: Approver | None,
        *,
        auto_approve: bool = False,
        scopes: ScopeFinder | None = None,
        project_settings: Path | None = None,
        on_grant: Callable[[str, str], None] | None = None,
    ) -> None:
        self._on_grant = on_grant
        """Told ``(kind, value)`` of each new standing grant, so a surface can store it and ``restore_grant``
        it into the session that continues this one (after a restart, or once an idle session is reloaded)."""
        self._approver = approver
        self._auto_approve = auto_approve
        self._scopes = scopes
        self._project_settings = project_settings
        self._grants: list[SessionGrant] = []
        self._refusals: list[SessionGrant] = []
        self._issued: OrderedDict[str, ApprovalRequest] = OrderedDict()
        # One question on the terminal at a time; a grant given for the first may answer the second.
        self._asking = asyncio.Lock()

    @property
    def headless(self) -> bool:
        return self._approver is None and not self._auto_approve

    @property
    def grants(self) -> tuple[SessionGrant, ...]:
        return tuple(self._grants)

    @property
    def refusals(self) -> tuple[SessionGrant, ...]:
        return tuple(self._refusals)

    def restore_grant(self, kind: str, value: str) -> None:
        """Re-establish a grant ``on_grant`` reported. Grants are re-checked on every use (the scope finder
        re-reads each action), so a restored grant covers exactly what it covered when it was given."""
        if kind == "scope":
            self._grants.append(grant_for(ApprovalScope.model_validate_json(value)))
        elif kind == "refusal":
            self._refusals.append(grant_for(ApprovalScope.model_validate_json(value)))
        elif kind == "rule":
            self._grants.append(grant_for_rule(value))
        else:
            raise ValueError(f"unknown kind of stored grant {kind!r}")

    def has_session_grant(self, digest: str) -> bool:
        return any(
            grant.kind == "exact" and grant.digest is not None and hmac.compare_digest(digest, grant.digest)
            for grant in self._grants
        )

    # -- requests -------------------------------------------------------------------------------------

    def request_for(self, action: PreparedActionDraft, verdict: Verdict) -> ApprovalRequest:
        """The request to show and to resolve, with the answers beyond "once" this ask may take."""
        offer = self._offer(action, verdict)
        request = ApprovalRequest(
            session_id=action.session_id,
            action=action,
            verdict=verdict,
            scopes=offer.scopes,
            project_rule=offer.project_rule if self._project_settings is not None else None,
        )
        self._issued[request.request_id] = request
        while len(self._issued) > _ISSUED_KEPT:
            self._issued.popitem(last=False)
        return request

    def _offer(self, action: PreparedActionDraft, verdict: Verdict) -> Offer:
        if once_only_reason(verdict) is not None:
            return Offer()
        if self._scopes is not None:
            return self._scopes.offer(action, verdict)
        return Offer(scopes=(ApprovalScope(kind="exact", value=action.digest, label="this exact action"),))

    def _own(self, request: ApprovalRequest) -> ApprovalRequest:
        """The broker's own copy of ``request``: what it offered is what it honours, whatever a caller built."""
        issued = self._issued.pop(request.request_id, None)
        if issued is not None and issued.digest == request.digest and issued.verdict == request.verdict:
            return issued
        offer = self._offer(request.action, request.verdict)
        return request.model_copy(
            update={
                "scopes": offer.scopes,
                "project_rule": offer.project_rule if self._project_settings is not None else None,
            }
        )

    # -- answers --------------------------------------------------------------------------------------

    def grant_answer(self, request: ApprovalRequest) -> ApprovalResponse | None:
        """The standing answer for ``request``: a rejection when a session refusal covers the action, else an
        approval from a session grant that covers it when the verdict allows one; None when neither does."""
        for refusal in self._refusals:
            if self._covers(refusal, request.action):
                return ApprovalResponse(
                    decision=ApprovalDecision.REJECT,
                    digest=request.digest,
                    feedback=f"the user refused {refusal.label} for the rest of this session",
                    scope=refusal.label if refusal.kind != "exact" else "exact",
                    approved_by="refusal:session",
                )
        if once_only_reason(request.verdict) is not None:
            return None
        for grant in self._grants:
            if self._covers(grant, request.action):
                return ApprovalResponse(
                    decision=ApprovalDecision.APPROVE_ONCE,
                    digest=request.digest,
                    scope=grant.label if grant.kind != "exact" else "exact",
                    approved_by="grant:session",
                )
        return None

    def _covers(self, grant: SessionGrant, action: PreparedActionDraft) -> bool:
        if grant.kind == "exact":
            return grant.digest is not None and hmac.compare_digest(grant.digest, action.digest)
        return self._scopes is not None and self._scopes.covers(grant, action)

    async def resolve(
        self, request: ApprovalRequest, *, headless_reason: str | None = None
    ) -> ApprovalResponse:
        """Answer ``request``; ``headless_reason`` replaces the refusal's reason when no one can answer."""
        request = self._own(request)
        digest = request.digest
        if request.verdict.decision is not Decision.ASK:
            return ApprovalResponse(
                decision=ApprovalDecision.REJECT,
                digest=digest,
                feedback=f"policy said {request.verdict.decision.value}; only an ask can be approved",
                approved_by="broker",
            )
        standing = self.grant_answer(request)
        if standing is not None:
            return standing
        if self._auto_approve:
            return ApprovalResponse(
                decision=ApprovalDecision.APPROVE_ONCE, digest=digest, approved_by="flag:-y"
            )
        if self._approver is None:
            # Say what policy asked about first: a CI log (and the model) must show which rule to change.
            return ApprovalResponse(
                decision=ApprovalDecision.REJECT,
                digest=digest,
                feedback=f"{policy_asked(request.verdict)}; {headless_reason or HEADLESS_REASON}",
                approved_by="headless",
            )
        async with self._asking:
            standing = self.grant_answer(request)
            if standing is not None:
                return standing
            response = await self._approver.decide(request)
        if not hmac.compare_digest(response.digest, digest):
            return ApprovalResponse(
                decision=ApprovalDecision.REJECT,
                digest=digest,
                feedback="the approval answered a different version of this action; nothing was run",
                approved_by="broker:digest_mismatch",
            )
        if response.decision is ApprovalDecision.APPROVE_SESSION:
            return self._grant_session(request, response)
        if response.decision is ApprovalDecision.REJECT_SESSION:
            return self._refuse_session(request, response)
        if response.decision is ApprovalDecision.APPROVE_PROJECT:
            return self._grant_project(request, response)
        return response

    def _once_instead(self, response: ApprovalResponse, why: str) -> ApprovalResponse:
        return response.model_copy(
            update={
                "decision": ApprovalDecision.APPROVE_ONCE,
                "scope": None,
                "feedback": f"approved once: {why}",
            }
        )

    def _grant_session(self, request: ApprovalRequest, response: ApprovalResponse) -> ApprovalResponse:
        kind = response.scope or "exact"
        scope = next((s for s in request.scopes if s.kind == kind), None)
        if scope is None:
            offered = ", ".join(s.kind for s in request.scopes) or "none"
            return self._once_instead(
                response, f"no session scope {kind!r} was offered for this action (offered: {offered})"
            )
        self._grants.append(grant_for(scope))
        if self._on_grant is not None:
            self._on_grant("scope", scope.model_dump_json())
        return response.model_copy(update={"scope": kind})

    def _refuse_session(self, request: ApprovalRequest, response: ApprovalResponse) -> ApprovalResponse:
        """Remember the refusal of the scope the answer chose among those offered; an ask that offered none
        (one no grant may answer) is refused again only as this exact action."""
        kind = response.scope or "exact"
        scope = next((s for s in request.scopes if s.kind == kind), None)
        if scope is None:
            scope = ApprovalScope(kind="exact", value=request.digest, label="this exact action")
        self._refusals.append(grant_for(scope))
        if self._on_grant is not None:
            self._on_grant("refusal", scope.model_dump_json())
        return response.model_copy(update={"scope": scope.kind})

    def _grant_project(self, request: ApprovalRequest, response: ApprovalResponse) -> ApprovalResponse:
        rule = request.project_rule
        if rule is None or self._project_settings is None:
            return self._once_instead(response, "no project rule was offered for this action")
        try:
            add_allow_rule(self._project_settings, rule)
        except ProjectSettingsError as exc:
            return self._once_instead(response, f"the project rule {rule} was not saved: {exc}")
        self._grants.append(grant_for_rule(rule))
        if self._on_grant is not None:
            self._on_grant("rule", rule)
        return response.model_copy(
            update={"scope": rule, "feedback": f"added {rule} to {self._project_settings}"}
        )
