"""The user's trust store: the workspaces whose project settings the user trusts, each against the SHA-256 of
the settings file's bytes it was shown (``ABSENT`` when there was none), so any change to the file asks again.

It lives in ``$SEEPIENT_HOME/trusted-projects.json`` (mode 0600, under a 0700 folder), where the model can
neither read nor write. Writes take a lock, then go to a temporary file that is fsynced and renamed over the
old one, and the folder is fsynced: a crash leaves the old list or the new one. A store that is a link, not
the user's own, or writable by others is refused rather than believed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from seepient.config.settings import SettingsError

_VERSION = 1


class TrustStoreError(SettingsError):
    """The trust store cannot be read or written; the message names the file and what to do."""


@dataclass(frozen=True)
class TrustEntry:
    workspace: str
    settings_sha256: str
    trusted_at: str


class TrustStore:
    """Read and change the trust store at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def key(workspace: Path) -> str:
        """Workspaces are known by their resolved path: a link to a trusted folder is that folder."""
        return os.path.realpath(workspace)

    def entries(self) -> dict[str, TrustEntry]:
        raw = self._read()
        return {
            workspace: TrustEntry(workspace, entry["settingsSha256"], entry.get("trustedAt", ""))
            for workspace, entry in raw.items()
        }

    def is_trusted(self, workspace: Path, settings_sha256: str) -> bool:
        entry = self._read().get(self.key(workspace))
        return entry is not None and entry["settingsSha256"] == settings_sha256

    def trust(self, workspace: Path, settings_sha256: str) -> None:
        """Trust ``workspace`` with the settings whose bytes hash to ``settings_sha256`` (what the user saw)."""
        with self._locked():
            entries = self._read()
            entries[self.key(workspace)] = {
                "settingsSha256": settings_sha256,
                "trustedAt": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            self._write(entries)

    def revoke(self, workspace: Path) -> bool:
        """Forget ``workspace``; False when it was not trusted."""
        with self._locked():
            entries = self._read()
            if entries.pop(self.key(workspace), None) is None:
                return False
            self._write(entries)
            return True

    # -- the file -------------------------------------------------------------------------------------

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise self._error(f"cannot be read ({exc.strerror}); a link is never followed") from None
        try:
            info = os.fstat(fd)
            self._check_owner(info)
            with os.fdopen(os.dup(fd), "rb") as handle:
                content = handle.read()
        finally:
            os.close(fd)
        try:
            data: Any = json.loads(content.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise self._error(f"is not valid JSON ({exc})") from None
        workspaces = data.get("workspaces") if isinstance(data, dict) else None
        if not isinstance(workspaces, dict) or not all(
            isinstance(entry, dict) and isinstance(entry.get("settingsSha256"), str)
            for entry in workspaces.values()
        ):
            raise self._error('does not hold {"workspaces": {PATH: {"settingsSha256": ...}}}')
        return workspaces

    def _check_owner(self, info: os.stat_result) -> None:
        if not stat.S_ISREG(info.st_mode):
            raise self._error("is not a regular file")
        if info.st_uid != os.geteuid():
            raise self._error("belongs to another user")
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise self._error("is writable by other users (it should be mode 0600)")

    def _write(self, entries: dict[str, dict[str, str]]) -> None:
        data = json.dumps({"version": _VERSION, "workspaces": entries}, indent=2, sort_keys=True) + "\n"
        folder = self.path.parent
        fd, temp = tempfile.mkstemp(dir=folder, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            try:
                os.fchmod(fd, 0o600)
                view = memoryview(data.encode("utf-8"))
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise self._error(f"cannot be written ({exc.strerror or exc})") from None
        folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder_fd)
        finally:
            os.close(folder_fd)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time: two runs trusting two workspaces at once must both be remembered."""
        folder = self.path.parent
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(
                folder / f".{self.path.name}.lock",
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
            )
        except OSError as exc:
            raise self._error(f"cannot be locked ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _error(self, what: str) -> TrustStoreError:
        return TrustStoreError(
            f"{self.path}: the trust store {what}; fix or remove it (it lists the projects you trust)"
        )
