"""The one root of Seepient's exceptions and its families: every exception class in ``seepient`` derives from
exactly one family below, and the surfaces map a family (not each class) to an exit code
(``surfaces/cli/exit_codes.py``) and an HTTP status (``surfaces/server/error_statuses.py``).

Classes that were ``ValueError`` or ``RuntimeError`` before keep that base as well, so existing ``except``
clauses still catch them.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not ``typing``'s: the warm start's client loads this module and no typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TypeVar

    _T = TypeVar("_T")


class SeepientError(Exception):
    """Anything Seepient raises on purpose; the message says what happened and, where it can, what to do."""


class ConfigurationError(SeepientError):
    """Settings, flags, certificates or a deployment file that cannot be used as given."""


class InvalidInputError(SeepientError):
    """Input that is malformed: tool arguments, a patch, a URL, a sed script, a hook's answer."""


class RefusalError(SeepientError):
    """An action or a peer refused: by policy, the path guard, the address policy, a signature check."""


class ProviderError(SeepientError):
    """A model or its provider failed: unknown model, missing key, every route exhausted, a bad replay script."""


class ExecutionError(SeepientError):
    """Carrying out an approved action failed: a sandbox, a server process, a network call, an image build."""


class AuditError(SeepientError):
    """The audit log, its keys, its anchor or its witness cannot be read, written or trusted."""


class StorageError(SeepientError):
    """The session store or another durable store cannot be opened, read or written."""


class NotFoundError(SeepientError):
    """What was asked for does not exist (a pending approval, a skill, a session)."""


class ConflictError(SeepientError):
    """The request collides with the current state (a turn already running, an approval already answered)."""


class AuthError(SeepientError):
    """The caller may not do this: a tenant outside its workspace root, a rejected token."""


FAMILIES: tuple[type[SeepientError], ...] = (
    ConfigurationError,
    InvalidInputError,
    RefusalError,
    ProviderError,
    ExecutionError,
    AuditError,
    StorageError,
    NotFoundError,
    ConflictError,
    AuthError,
)
"""Every family, each a direct child of ``SeepientError``."""
_FAMILY_OF: dict[type[BaseException], type[SeepientError]] = {family: family for family in FAMILIES}


def family_of(error: BaseException | type[BaseException]) -> type[SeepientError] | None:
    """The family an exception (or its class) belongs to: the first in its method resolution order, or None."""
    return closest_entry(_FAMILY_OF, error)


def closest_entry(
    table: Mapping[type[BaseException], _T], error: BaseException | type[BaseException]
) -> _T | None:
    """The value ``table`` gives the nearest class in ``error``'s method resolution order, None when none is
    listed: how a surface maps an error to its exit code or HTTP status (a specific class listed beats its
    family)."""
    for cls in (error if isinstance(error, type) else type(error)).__mro__:
        if cls in table:
            return table[cls]
    return None
