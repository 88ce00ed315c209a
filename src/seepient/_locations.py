"""Where Seepient's home and the managed settings file are, from the environment alone. Standard library only:
the warm start's client asks before anything else of Seepient loads; ``config.paths`` and ``config.settings``
build their paths from these."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not ``typing``'s: see ``seepient/__init__.py``
if TYPE_CHECKING:
    from collections.abc import Mapping

MANAGED_SETTINGS_ENV = "SEEPIENT_MANAGED_SETTINGS"
DEFAULT_MANAGED_SETTINGS = "/etc/seepient/managed-settings.json"


def seepient_home(environ: Mapping[str, str]) -> str:
    """``$SEEPIENT_HOME`` (a leading ``~`` expanded) or ``~/.seepient``, as spelt (not yet made absolute)."""
    raw = environ.get("SEEPIENT_HOME")
    return os.path.expanduser(raw) if raw else os.path.join(os.path.expanduser("~"), ".seepient")


def managed_settings(environ: Mapping[str, str]) -> str:
    """``$SEEPIENT_MANAGED_SETTINGS`` (a leading ``~`` expanded) or /etc/seepient/managed-settings.json."""
    raw = environ.get(MANAGED_SETTINGS_ENV)
    return os.path.expanduser(raw) if raw else DEFAULT_MANAGED_SETTINGS
