"""Exit codes of the ``seepient`` command, documented in the README and in ``--help``, and the one table that
maps each family of Seepient's errors (``protocol/errors.py``) to one of them."""

from __future__ import annotations

from seepient.protocol import errors
from seepient.protocol.refusals import SandboxUnavailable

OK = 0
"""The turn ended with the model's answer; the audit log verified; the sandboxed command exited 0."""
FAILED = 1
"""The turn ended in an error (the model failed), or the audit log did not verify."""
USAGE = 2
"""Bad usage or configuration: unknown option, bad settings file, missing API key, missing workspace."""
STEP_LIMIT = 3
"""The turn stopped at the step limit, or at its token or wall-time budget, before the model answered."""
SANDBOX_UNAVAILABLE = 4
"""``sandbox run`` could not start the sandbox (the message says why and how to fix it)."""
REFUSED = 5
"""A headless run (no terminal, no ``-y``) refused an action because it needed approval; stderr names the rule
that asked and why. A model error (1), the step limit (3) and Ctrl-C (130) take precedence."""
INTERRUPTED = 130
"""Ctrl-C ended the turn (cleanly: no half-done action)."""

HELP = (
    "Exit codes: 0 done; 1 the turn or the audit check failed; 2 bad usage or configuration; "
    "3 step limit or turn budget reached; 4 sandbox unavailable; 5 a headless run refused an action that "
    "needed approval; 130 interrupted. "
    "`sandbox run` passes the command's own exit code through."
)

EXIT_CODES: dict[type[BaseException], int] = {
    SandboxUnavailable: SANDBOX_UNAVAILABLE,
    errors.ConfigurationError: USAGE,
    errors.InvalidInputError: USAGE,
    errors.ProviderError: USAGE,
    errors.StorageError: USAGE,
    errors.NotFoundError: USAGE,
    errors.RefusalError: FAILED,
    errors.ExecutionError: FAILED,
    errors.AuditError: FAILED,
    errors.ConflictError: FAILED,
    errors.AuthError: FAILED,
}
"""Family (or a more specific class listed first) to exit code; the closest entry in an error's MRO wins."""


def exit_code_for(error: errors.SeepientError) -> int:
    """The exit code a command ends with when ``error`` stops it."""
    code = errors.closest_entry(EXIT_CODES, error)
    return FAILED if code is None else code
