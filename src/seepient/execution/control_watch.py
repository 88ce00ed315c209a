"""The control guard as a session uses it (``control_guard.py`` is the snapshot and the repair): commands
bracketed one by one while background processes may still write, and the baseline journalled under
``$SEEPIENT_HOME/control/`` so that a session killed mid-command is repaired by the next one."""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import Callable
from pathlib import Path

from seepient.execution.control_guard import ControlEntry, ControlGuard, ControlSnapshot, Repair


class ControlWatch:
    """The guard as a session uses it. Each command is bracketed by a snapshot and a repair; the baseline moves
    forward only through repairs while anything the model started may still be writing (a command, a
    background process), and is taken afresh once nothing is, so the user's own edits between steps stand.

    A journal (``$SEEPIENT_HOME/control/``) holds the baseline while something runs: if Seepient is killed in
    the middle of a command, the next session in the workspace repairs against it (``recover``).
    """

    def __init__(
        self,
        guard: ControlGuard,
        *,
        journal_dir: Path | None,
        background_running: Callable[[], bool] = lambda: False,
    ) -> None:
        self.guard = guard
        self._journal_dir = journal_dir
        self._background_running = background_running
        self._baseline: ControlSnapshot | None = None
        self._active = 0
        self._lock = threading.Lock()
        self._pending: list[Repair] = []
        self._journal: Path | None = None
        self._journal_written: ControlSnapshot | None = None
        self._journal_dir_made = False

    def _busy(self) -> bool:
        return self._active > 0 or self._background_running()

    def before_command(self) -> None:
        with self._lock:
            if self._baseline is None or not self._busy():
                self._baseline = self.guard.snapshot()
            else:
                repairs, self._baseline = self.guard.repair(self._baseline)
                self._pending += repairs
            self._active += 1
            self._write_journal()

    def after_command(self) -> list[Repair]:
        """Repairs since the command started (and any a background watch found before); for its output."""
        with self._lock:
            self._active = max(0, self._active - 1)
            baseline = self._baseline if self._baseline is not None else self.guard.snapshot()
            repairs, self._baseline = self.guard.repair(baseline)
            found, self._pending = [*self._pending, *repairs], []
            if self._busy():
                self._write_journal()
            else:
                self._clear_journal()
            return found

    def sweep(self) -> None:
        """While background processes run: repair against the baseline (a watch calls this every second)."""
        with self._lock:
            if self._baseline is None:
                return
            repairs, self._baseline = self.guard.repair(self._baseline)
            self._pending += repairs
            if not self._busy():
                self._clear_journal()

    def report(self, repairs: list[Repair]) -> None:
        """Keep repairs found outside a command for the next result that can show them."""
        with self._lock:
            self._pending += repairs

    def take_pending(self) -> list[Repair]:
        with self._lock:
            found, self._pending = self._pending, []
            return found

    def recover(self) -> list[Repair]:
        """Repair against the journal of a session that was killed while a command ran in this workspace."""
        if self._journal_dir is None:
            return []
        repairs: list[Repair] = []
        for journal in sorted(self._journal_dir.glob(f"{_workspace_tag(self.guard.workspace)}-*.json")):
            if _journal_owner_alive(journal):
                continue
            snapshot = _load_journal(journal)
            if snapshot is not None:
                found, _ = self.guard.repair(snapshot)
                repairs += found
            with contextlib.suppress(OSError):
                journal.unlink()
        return repairs

    def _write_journal(self) -> None:
        if self._journal_dir is None or self._baseline is None or self._journal_written is self._baseline:
            return
        if self._journal is None:
            tag = _workspace_tag(self.guard.workspace)
            self._journal = self._journal_dir / f"{tag}-{os.getpid()}-{secrets.token_hex(4)}.json"
        try:
            if not self._journal_dir_made:
                self._journal_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                self._journal_dir_made = True
            _dump_journal(self._journal, self._baseline)
            self._journal_written = self._baseline
        except OSError:
            # The journal only helps after a crash; a full disk must not stop the command. The folder is
            # made again next time, in case it was what went missing.
            self._journal_dir_made = False

    def _clear_journal(self) -> None:
        if self._journal is not None:
            with contextlib.suppress(OSError):
                self._journal.unlink()
            self._journal_written = None


def _workspace_tag(workspace: Path) -> str:
    import hashlib

    return hashlib.sha256(str(workspace).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _journal_owner_alive(journal: Path) -> bool:
    parts = journal.stem.split("-")
    try:
        pid = int(parts[1])
    except (IndexError, ValueError):
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _dump_journal(path: Path, snapshot: ControlSnapshot) -> None:
    import base64
    import json

    data = {
        "git_dirs": sorted(snapshot.git_dirs),
        "entries": {
            relative: {
                "kind": entry.kind,
                "key": list(entry.key),
                "content": None if entry.content is None else base64.b64encode(entry.content).decode("ascii"),
                "link": entry.link,
                "gitdir": entry.gitdir,
            }
            for relative, entry in snapshot.entries.items()
        },
    }
    temp = path.with_suffix(".tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        # dumps, not dump: dump feeds the file from the pure-Python encoder, chunk by chunk.
        handle.write(json.dumps(data))
    os.replace(temp, path)


def _load_journal(path: Path) -> ControlSnapshot | None:
    import base64
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = {
            relative: ControlEntry(
                kind=item["kind"],
                key=tuple(item["key"]),  # type: ignore[arg-type]
                content=None if item["content"] is None else base64.b64decode(item["content"]),
                link=item["link"],
                gitdir=item["gitdir"],
            )
            for relative, item in data["entries"].items()
        }
        return ControlSnapshot(entries=entries, git_dirs=frozenset(data["git_dirs"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
