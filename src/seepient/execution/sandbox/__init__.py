"""OS sandboxes for shell commands: bubblewrap on Linux."""

from seepient.execution.sandbox.bwrap import BwrapSandbox, SandboxStatus

__all__ = ["BwrapSandbox", "SandboxStatus"]
