"""Approval: who answers when policy asks, and the grants those answers leave behind."""

from seepient.approval.broker import HEADLESS_REASON, ApprovalBroker, Approver
from seepient.approval.project_settings import ProjectSettingsError, add_allow_rule
from seepient.approval.scopes import ScopeFinder, SessionGrant, grant_for, grant_for_rule, once_only_reason

__all__ = [
    "HEADLESS_REASON",
    "ApprovalBroker",
    "Approver",
    "ProjectSettingsError",
    "ScopeFinder",
    "SessionGrant",
    "add_allow_rule",
    "grant_for",
    "grant_for_rule",
    "once_only_reason",
]
