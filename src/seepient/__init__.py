"""Seepient: a runtime for AI coding agents in which a model never executes an unchecked operation on the host.

The SDK names (``Agent``, ``Client``) are imported lazily so that ``import seepient`` stays cheap for the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seepient._lazy_exports import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:
    from seepient.surfaces.sdk import Agent, Client

__all__ = ["Agent", "Client", "__version__"]


__getattr__ = lazy_exports(__name__, {"Agent": "seepient.surfaces.sdk", "Client": "seepient.surfaces.sdk"})
