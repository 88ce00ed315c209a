"""Step 7 of the lifecycle: carrying out approved actions on the host, shell commands in a sandbox and file
changes through the exact commit helper.

Names are imported lazily so the ``seepient-fs-commit`` console script starts without loading asyncio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seepient._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from seepient.execution.commit import commit_change
    from seepient.execution.environment import scrubbed_environment
    from seepient.execution.jail import run_sandboxed
    from seepient.execution.local import LocalExecutor

__all__ = ["LocalExecutor", "commit_change", "run_sandboxed", "scrubbed_environment"]

_HOMES = {
    "LocalExecutor": "seepient.execution.local",
    "run_sandboxed": "seepient.execution.jail",
    "commit_change": "seepient.execution.commit",
    "scrubbed_environment": "seepient.execution.environment",
}


__getattr__ = lazy_exports(__name__, _HOMES)
