"""The nonce store: durable, single-use per nonce and per dispatch id, pruned only past expiry."""

from __future__ import annotations

import datetime as dt
import stat
from pathlib import Path

from seepient.scheduler import NonceStore

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)


def test_spent_nonces_survive_reopening_and_pruning_forgets_only_expired_ones(tmp_path: Path) -> None:
    store = NonceStore.open(tmp_path / "state")
    assert store.consume("n-old", "d-old", expires_at=NOW - dt.timedelta(minutes=5), now=NOW)
    assert store.consume("n-new", "d-new", expires_at=NOW + dt.timedelta(minutes=5), now=NOW)
    store.close()
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700

    reopened = NonceStore.open(tmp_path / "state")
    assert not reopened.consume("n-old", "d-other", expires_at=NOW, now=NOW)
    assert not reopened.consume("n-other", "d-new", expires_at=NOW, now=NOW)
    assert reopened.prune(before=NOW - dt.timedelta(minutes=1)) == 1
    assert not reopened.consume("n-new", "d-new", expires_at=NOW, now=NOW)
    assert reopened.consume("n-old", "d-old", expires_at=NOW, now=NOW)
    reopened.close()
