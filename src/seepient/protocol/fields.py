"""Copying the same-named fields of one record into another shape (a view, a JSON body), in a given order."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def same_named(source: object, names: Iterable[str]) -> dict[str, Any]:
    """``{name: source.name}`` for each of ``names``, in their order (a JSON body keeps it)."""
    return {name: getattr(source, name) for name in names}
