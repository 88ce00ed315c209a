"""Shell redirection targets that go nowhere on disk: ``/dev/null``-like names and ``/dev/fd/N``."""

from __future__ import annotations

import re

# Most of them are symlinks into /proc/self, which the path guard refuses for everything else, so they are
# recognised on the path as written.
_SHELL_SINKS = frozenset({"/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_FD_PATH = re.compile(r"/dev/fd/[0-9]+")


def is_shell_sink(path: str) -> bool:
    """``/dev/null``-like names and ``/dev/fd/N`` (exactly: ``/dev/fd/3/x`` is not a descriptor)."""
    return path in _SHELL_SINKS or _FD_PATH.fullmatch(path) is not None
