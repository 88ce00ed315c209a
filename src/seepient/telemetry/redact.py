"""Secrets never leave in telemetry: the values of secret-looking environment variables are cut out of any text
a span carries, whatever ``includeContent`` allows."""

from __future__ import annotations

import re
from collections.abc import Mapping

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|HEADERS", re.I)
_MIN_SECRET_CHARS = 6
"""Shorter values (``1``, ``true``) are not secrets, and cutting them would mangle every text."""
REDACTED = "[redacted]"
_KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}|sk-ant-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,})"
)
"""Well-known shapes of provider keys, for a key pasted into a prompt that no variable holds."""


class Redactor:
    def __init__(self, environ: Mapping[str, str]) -> None:
        values = {
            value
            for name, value in environ.items()
            if _SECRET_NAME.search(name) and len(value) >= _MIN_SECRET_CHARS
        }
        # Longest first, so a secret that contains another is cut whole.
        ordered = sorted(values, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __call__(self, text: str) -> str:
        if self._pattern is not None:
            text = self._pattern.sub(REDACTED, text)
        return _KEY_SHAPES.sub(REDACTED, text)
