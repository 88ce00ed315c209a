"""Step 8 of the lifecycle: the hash-chained, fsynced audit log (an intent before each action runs, its outcome
after), signed head checkpoints and a witness, verification of the chain, and the actions a crash interrupted.

Verification and its report load on first use: a session appends to its log and never verifies it."""

from typing import TYPE_CHECKING

from seepient._lazy_exports import lazy_exports
from seepient.audit.log import AuditEntry, AuditLog, AuditLogCorrupted, AuditLogError
from seepient.audit.record import (
    AuditOutcome,
    AuditRecord,
    FileImages,
    FileState,
    IntentRecord,
    OutcomeRecord,
    OutcomeStatus,
    SessionRecord,
    Surface,
    output_digest,
)
from seepient.audit.signing import AuditKeyError, CheckpointSigner, CheckpointVerifier

if TYPE_CHECKING:
    from seepient.audit.report_text import format_report
    from seepient.audit.verify import InterruptedAction, VerifyReport, verify_log

__getattr__ = lazy_exports(
    __name__,
    {"format_report": "seepient.audit.report_text"}
    | dict.fromkeys(("InterruptedAction", "VerifyReport", "verify_log"), "seepient.audit.verify"),
)

__all__ = [
    "AuditEntry",
    "AuditKeyError",
    "AuditLog",
    "AuditLogCorrupted",
    "AuditLogError",
    "AuditOutcome",
    "AuditRecord",
    "CheckpointSigner",
    "CheckpointVerifier",
    "FileImages",
    "FileState",
    "IntentRecord",
    "InterruptedAction",
    "OutcomeRecord",
    "OutcomeStatus",
    "SessionRecord",
    "Surface",
    "VerifyReport",
    "format_report",
    "output_digest",
    "verify_log",
]
