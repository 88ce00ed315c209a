"""A private PostgreSQL cluster for tests: initdb in a temp dir, a Unix socket only, run as ``postgres``.

PostgreSQL refuses to run as root, so the cluster belongs to the ``postgres`` user. Where PostgreSQL is not
installed the tests that need it skip with the reason, except in CI (``CI=true``), where they fail: CI
installs it, so its absence there is a broken pipeline, not a reason to pass.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

_MISSING = (
    "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb or no postgres user): "
    "apt-get install -y postgresql"
)


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def require_postgres() -> Path:
    bin_dir = _bin_dir()
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        bin_dir = None
    if bin_dir is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{_MISSING} (CI=true: these tests must run in CI)")
        pytest.skip(_MISSING)
    return bin_dir


def _as_postgres(*argv: str) -> subprocess.CompletedProcess[str]:
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*prefix, *argv], capture_output=True, text=True, timeout=120, check=False)


@contextmanager
def postgres_cluster() -> Iterator[str]:
    """Start a throwaway cluster and yield the libpq socket directory (the host for connections)."""
    bin_dir = require_postgres()
    # Not under pytest's tmp dirs: those are root-only (0700), and the postgres user must reach its files.
    root = Path(tempfile.mkdtemp(prefix="seepient-pg-"))
    os.chmod(root, 0o755)
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
    try:
        done = _as_postgres(
            str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8"
        )
        if done.returncode != 0:
            pytest.fail(f"initdb failed: {done.stderr}")
        options = f"-k {sockets} -c listen_addresses='' -c fsync=off -c max_connections=300"
        done = _as_postgres(
            str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", options, "-w", "start"
        )
        if done.returncode != 0:
            log = (root / "log").read_text() if (root / "log").exists() else ""
            pytest.fail(f"pg_ctl start failed: {done.stderr}\n{log}")
        try:
            yield str(sockets)
        finally:
            _as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def create_database(sockets: str, name: str) -> str:
    """Create database ``name`` and return its async SQLAlchemy URL."""
    import psycopg

    with psycopg.connect(host=sockets, user="postgres", dbname="postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql+psycopg://postgres@/{name}?host={sockets}"
