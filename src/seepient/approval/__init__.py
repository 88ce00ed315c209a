"""Approval: who answers when policy asks, and the grants those answers leave behind."""

from seepient.approval.broker import HEADLESS_REASON, ApprovalBroker, Approver

__all__ = ["HEADLESS_REASON", "ApprovalBroker", "Approver"]
