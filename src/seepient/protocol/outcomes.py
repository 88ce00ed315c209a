"""What carrying out an approved action answers: a command's output, a commit's code, a fetched page, a
background process's state (the typed refusals that mean nothing ran are in ``refusals.py``)."""

from __future__ import annotations

from typing import Literal

from seepient.protocol.frozen import FrozenModel
from seepient.protocol.retrieval import KnowledgeOutcome, WebSearchOutcome


class ShellOutcome(FrozenModel):
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    duration_ms: int = 0
    sandbox: str = "bwrap"


CommitCode = Literal["OK", "FILE_CHANGED", "NOT_FOUND", "NOT_UNIQUE", "OUTSIDE_WORKSPACE", "INVALID", "ERROR"]


class CommitOutcome(FrozenModel):
    """The commit helper's answer. Anything but ``OK`` means nothing was written."""

    code: CommitCode
    message: str = ""
    path: str = ""
    post_image_sha256: str | None = None

    @property
    def ok(self) -> bool:
        return self.code == "OK"


class GrepOutcome(FrozenModel):
    lines: tuple[str, ...]
    truncated: bool = False
    engine: Literal["ripgrep", "python"] = "ripgrep"


class FetchOutcome(FrozenModel):
    """A fetched response: ``url`` is the final URL after redirects, ``text`` the body decoded (cut at the
    size cap when ``truncated``), ``address`` the validated IP the last hop connected to."""

    url: str
    status: int
    content_type: str = ""
    text: str = ""
    truncated: bool = False
    redirects: tuple[str, ...] = ()
    address: str | None = None


class BackgroundStarted(FrozenModel):
    """A background command that started: ``process_id`` (``bg_…``) is what shell_output and shell_kill take."""

    process_id: str
    sandbox: str = "bwrap"


class BackgroundOutput(FrozenModel):
    """Output a background process wrote since the last read, and its state.

    ``*_dropped`` counts bytes that were written but can no longer be shown (they fell out of the ring
    buffer, or the read was longer than its cap and the older part was skipped). ``exit_code`` is set once
    the process ended; ``ended_by`` says why it ended when Seepient ended it.
    """

    process_id: str
    command: str
    running: bool
    exit_code: int | None = None
    ended_by: Literal["kill", "timeout", "session_end"] | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    runtime_ms: int = 0


Outcome = (
    ShellOutcome
    | CommitOutcome
    | FetchOutcome
    | BackgroundStarted
    | BackgroundOutput
    | KnowledgeOutcome
    | WebSearchOutcome
)
"""Everything ``ActionExecutor.execute`` may answer; which one depends on the payload (see ``executor``)."""
