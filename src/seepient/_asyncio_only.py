"""The console script runs on asyncio only, so there httpcore2 is kept from loading trio: it imports trio whenever trio is
installed (a development dependency here, or whatever else a user's environment holds), which costs every
start that talks to a model ~70 ms and an ``ldconfig -p`` subprocess."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class _NoTrioForHttpcore:
    """A meta path finder that answers "not installed" to an import of trio made while httpcore2 is being
    imported (httpcore2 then leaves its trio backend out); any other import of trio finds it as usual."""

    @staticmethod
    def find_spec(
        name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == "trio" and _httpcore_importing():
            raise ModuleNotFoundError("Seepient's HTTP stack runs on asyncio, not trio", name=name)
        return None


def _httpcore_importing() -> bool:
    # importlib marks a module's spec while its body runs; without the mark (another Python) nothing is kept
    # out, which only costs the time.
    spec = getattr(sys.modules.get("httpcore2"), "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def keep_trio_out_of_httpcore() -> None:
    if not any(isinstance(finder, _NoTrioForHttpcore) for finder in sys.meta_path):
        sys.meta_path.insert(0, _NoTrioForHttpcore())
