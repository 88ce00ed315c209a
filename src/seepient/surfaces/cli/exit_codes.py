"""Exit codes of the ``seepient`` command, documented in the README and in ``--help``."""

OK = 0
"""The turn ended with the model's answer; the audit log verified; the sandboxed command exited 0."""
FAILED = 1
"""The turn ended in an error (the model failed), or the audit log did not verify."""
USAGE = 2
"""Bad usage or configuration: unknown option, bad settings file, missing API key, missing workspace."""
STEP_LIMIT = 3
"""The turn stopped at the step limit before the model answered."""
SANDBOX_UNAVAILABLE = 4
"""``sandbox run`` could not start the sandbox (the message says why and how to fix it)."""
INTERRUPTED = 130
"""Ctrl-C ended the turn (cleanly: no half-done action)."""

HELP = (
    "Exit codes: 0 done; 1 the turn or the audit check failed; 2 bad usage or configuration; "
    "3 step limit reached; 4 sandbox unavailable; 130 interrupted. "
    "`sandbox run` passes the command's own exit code through."
)
