"""The model tests close every model and router they made through ``helpers.track`` when each test ends."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.models.helpers import close_tracked


@pytest.fixture(autouse=True)
async def _close_tracked_models() -> AsyncIterator[None]:
    yield
    await close_tracked()
