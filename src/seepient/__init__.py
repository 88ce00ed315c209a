"""Seepient: a runtime for AI coding agents in which a model never executes an unchecked operation on the host.

The SDK names (``Agent``, ``Client``) are imported lazily so that ``import seepient`` stays cheap for the CLI.
"""

from __future__ import annotations

from seepient._lazy_exports import lazy_exports
from seepient._version import __version__

# Not ``typing.TYPE_CHECKING``: every console-script start imports this package, and ``typing`` costs a few ms
# the warm start's client does not otherwise pay.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from seepient.surfaces.sdk import Agent, Client

__all__ = ["Agent", "Client", "__version__"]


__getattr__ = lazy_exports(__name__, {"Agent": "seepient.surfaces.sdk", "Client": "seepient.surfaces.sdk"})
