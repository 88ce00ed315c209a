"""Each family of Seepient's errors has one exit code (``surfaces/cli/exit_codes.py``) and one HTTP status
(``surfaces/server/error_statuses.py``), the ones DESIGN §8 and the README document; concrete errors the
surfaces catch today land where they always did."""

from __future__ import annotations

import pytest

from seepient.config.settings import SettingsError
from seepient.models.base import ModelError
from seepient.protocol import errors
from seepient.protocol.errors import FAMILIES, SeepientError
from seepient.protocol.refusals import SandboxUnavailable
from seepient.scheduler.image import ImageBuildError
from seepient.store.repository import StoreError
from seepient.surfaces.cli import exit_codes
from seepient.surfaces.cli.exit_codes import EXIT_CODES, exit_code_for
from seepient.surfaces.server.error_statuses import HTTP_STATUSES, status_for
from seepient.surfaces.server.live import ApprovalNotPending, SessionBusy
from seepient.surfaces.server.tenancy import TenancyError

EXPECTED = {
    errors.ConfigurationError: (exit_codes.USAGE, 422),
    errors.InvalidInputError: (exit_codes.USAGE, 422),
    errors.ProviderError: (exit_codes.USAGE, 422),
    errors.RefusalError: (exit_codes.FAILED, 403),
    errors.ExecutionError: (exit_codes.FAILED, 500),
    errors.AuditError: (exit_codes.FAILED, 500),
    errors.StorageError: (exit_codes.USAGE, 500),
    errors.NotFoundError: (exit_codes.USAGE, 404),
    errors.ConflictError: (exit_codes.FAILED, 409),
    errors.AuthError: (exit_codes.FAILED, 403),
}


def test_every_family_is_in_both_tables() -> None:
    assert set(EXPECTED) == set(FAMILIES)
    assert set(FAMILIES) <= set(EXIT_CODES)
    assert set(FAMILIES) == set(HTTP_STATUSES)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.__name__)
def test_each_family_maps_to_its_code_and_status(family: type[SeepientError]) -> None:
    class Concrete(family):  # type: ignore[valid-type, misc]
        pass

    code, status = EXPECTED[family]
    assert exit_code_for(Concrete("x")) == code
    assert status_for(Concrete("x")) == status


def test_the_errors_surfaces_catch_keep_their_codes_and_statuses() -> None:
    assert exit_code_for(SettingsError("bad settings")) == exit_codes.USAGE == 2
    assert exit_code_for(ModelError("no key")) == exit_codes.USAGE
    assert exit_code_for(StoreError("no database")) == exit_codes.USAGE
    assert exit_code_for(ImageBuildError("no mmdebstrap")) == exit_codes.FAILED == 1
    # The more specific entry wins over its family (an ExecutionError is 1, a missing sandbox 4).
    assert exit_code_for(SandboxUnavailable("no bwrap")) == exit_codes.SANDBOX_UNAVAILABLE == 4
    assert status_for(TenancyError("outside the root")) == 403
    assert status_for(SettingsError("bad")) == status_for(ModelError("bad")) == 422
    assert status_for(SessionBusy("a turn is running")) == 409
    assert status_for(ApprovalNotPending("no such request")) == 404
