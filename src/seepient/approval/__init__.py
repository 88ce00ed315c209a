"""Approval: who answers when policy asks, and the grants those answers leave behind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seepient._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from seepient.approval.broker import HEADLESS_REASON, ApprovalBroker, Approver
    from seepient.approval.project_settings import ProjectSettingsError, add_allow_rule
    from seepient.approval.scopes import (
        ScopeFinder,
        SessionGrant,
        grant_for,
        grant_for_rule,
        once_only_reason,
    )

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

# Each name loads its own module on first use: a command that needs one name does not pay for the rest.
__getattr__ = lazy_exports(
    __name__,
    {
        "HEADLESS_REASON": "seepient.approval.broker",
        "ApprovalBroker": "seepient.approval.broker",
        "Approver": "seepient.approval.broker",
        "ProjectSettingsError": "seepient.approval.project_settings",
        "add_allow_rule": "seepient.approval.project_settings",
        "ScopeFinder": "seepient.approval.scopes",
        "SessionGrant": "seepient.approval.scopes",
        "grant_for": "seepient.approval.scopes",
        "grant_for_rule": "seepient.approval.scopes",
        "once_only_reason": "seepient.approval.scopes",
    },
)
