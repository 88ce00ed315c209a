"""A package's names that load on first use (PEP 562 ``__getattr__``), so that importing the package does not
load what most callers never touch (the MCP SDK, the HTTP stack, the runtime). One mapping per package, from
each name to the module that holds it."""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # not ``typing``'s: see ``seepient/__init__.py``
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` for ``package``: a name in ``homes`` is imported from its module once and kept on
    the package; any other name is an ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
