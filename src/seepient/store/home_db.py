"""What can be known of the store without loading SQLAlchemy: where the home database lives and which schema
revision is the newest."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

MIGRATIONS = resources.files("seepient.store") / "migrations"


def home_database(home: Path) -> Path:
    """The SQLite file of the home (the local surfaces' sessions, and a server's when given no database)."""
    return home / "seepient.db"


def newest_revision() -> str:
    """The newest migration, read from the file names (``0003_token_expiry.py`` is revision ``0003``; a test
    checks this agrees with alembic's own head)."""
    names = [entry.name for entry in (MIGRATIONS / "versions").iterdir()]
    return max(name.split("_", 1)[0] for name in names if name[:4].isdigit() and name.endswith(".py"))
