"""The typed refusals of carrying out an action: nothing ran (no sandbox here, a backend that does not run this
kind, a fetch the address policy refused), or it is unknown whether it did. Plain exceptions, so that what only
maps them (the command line's exit codes) loads no model."""

from __future__ import annotations

from seepient.protocol.errors import ExecutionError, RefusalError


class FetchRefused(RefusalError, RuntimeError):
    """A fetch that was refused by the address policy or failed; the message says which and why."""


class SandboxUnavailable(ExecutionError, RuntimeError):
    """No sandbox can run here and the user has not turned it off. The message says why and how to fix it."""


class OutcomeUnknown(ExecutionError, RuntimeError):
    """The action was handed to an executor that then stopped answering (a worker host died): it may or may
    not have run. It is recorded as interrupted and never retried on its own; the message says what to check."""


class UnsupportedAction(SandboxUnavailable):
    """This execution backend does not run this kind of action (a docker worker and a background process, say);
    nothing ran. The message names the action and what to use instead."""


class BackgroundRefused(RefusalError, RuntimeError):
    """A background request that cannot be served (unknown id, another session's process, too many running);
    the message says which and what to do."""
