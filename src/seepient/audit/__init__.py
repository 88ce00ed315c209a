"""Step 8 of the lifecycle: one hash-chained, fsynced audit record per action, and verification of the chain."""

from seepient.audit.log import AuditEntry, AuditLog, AuditLogCorrupted, AuditLogError
from seepient.audit.record import AuditOutcome, AuditRecord, OutcomeStatus, Surface, output_digest
from seepient.audit.verify import VerifyReport, format_report, verify_log

__all__ = [
    "AuditEntry",
    "AuditLog",
    "AuditLogCorrupted",
    "AuditLogError",
    "AuditOutcome",
    "AuditRecord",
    "OutcomeStatus",
    "Surface",
    "VerifyReport",
    "format_report",
    "output_digest",
    "verify_log",
]
