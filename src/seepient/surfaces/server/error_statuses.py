"""The one table that maps each family of Seepient's errors (``protocol/errors.py``) to the HTTP status the
server answers with (DESIGN §8: 403 for another tenant's workspace, 404 for what does not exist, 409 for a busy
session or an answered approval, 422 for settings or a model that cannot be used)."""

from __future__ import annotations

from seepient.protocol import errors

HTTP_STATUSES: dict[type[BaseException], int] = {
    errors.ConfigurationError: 422,
    errors.InvalidInputError: 422,
    errors.ProviderError: 422,
    errors.RefusalError: 403,
    errors.AuthError: 403,
    errors.NotFoundError: 404,
    errors.ConflictError: 409,
    errors.ExecutionError: 500,
    errors.AuditError: 500,
    errors.StorageError: 500,
}
"""Family to status; the closest entry in an error's MRO wins."""


def status_for(error: errors.SeepientError) -> int:
    """The HTTP status a request that ``error`` stopped is answered with."""
    status = errors.closest_entry(HTTP_STATUSES, error)
    return 500 if status is None else status
