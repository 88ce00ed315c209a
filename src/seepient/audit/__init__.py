"""Step 8 of the lifecycle: the hash-chained, fsynced audit log (an intent before each action runs, its outcome
after), signed head checkpoints and a witness, verification of the chain, and the actions a crash interrupted."""

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
from seepient.audit.verify import InterruptedAction, VerifyReport, format_report, verify_log

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
