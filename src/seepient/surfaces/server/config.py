"""The server's configuration: who may do what (roots, most permissive mode, models) and the limits it keeps.

Read from the ``"server"`` object of ``--config FILE.json``; the rest of that file is ordinary settings.
Without a file the server grants every principal the directory it was started in, and, on loopback only,
every consent mode and ``replay:`` scripts. A workspace's own project settings are untrusted (they can only make
Seepient stricter) unless the workspace lies at or below one of ``trustedRoots``: the operator's decision, not
any principal's and never the repository's.
"""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from seepient.config.settings import normalise_mode
from seepient.protocol.errors import ConfigurationError
from seepient.protocol.frozen import deferred_config

#: Consent modes from the most cautious to the most permissive.
MODE_ORDER = ("always-ask", "ask-untrusted", "auto", "autonomous-trusted")


class ServerConfigError(ConfigurationError):
    """The server configuration cannot be used; the message names the file and the field."""


class _Camel(BaseModel):
    model_config = deferred_config(extra="forbid", populate_by_name=True, frozen=True)


class PrincipalGrant(_Camel):
    """What one principal may do: open sessions under ``roots``, up to ``max_mode``, with ``models``."""

    roots: tuple[Path, ...] = ()
    max_mode: str = Field("ask-untrusted", alias="maxMode")
    models: tuple[str, ...] = ()
    allow_replay: bool = Field(False, alias="allowReplay")

    @field_validator("max_mode")
    @classmethod
    def _known_mode(cls, value: str) -> str:
        mode = normalise_mode(value)
        if mode not in MODE_ORDER:
            raise ValueError(f"unknown mode {value!r}; choose one of {', '.join(MODE_ORDER)}")
        return mode


class RateLimit(_Camel):
    requests_per_second: float = Field(20.0, alias="requestsPerSecond", gt=0)
    burst: int = Field(60, gt=0)


class ServerConfig(_Camel):
    principals: dict[str, PrincipalGrant] = Field(default_factory=dict)
    default_principal: PrincipalGrant | None = Field(None, alias="defaultPrincipal")
    """Applies to a principal not named in ``principals``; without it such a principal may open nothing."""
    approval_timeout_ms: int = Field(300_000, alias="approvalTimeoutMs", gt=0)
    max_request_bytes: int = Field(1_048_576, alias="maxRequestBytes", gt=0)
    max_ws_frame_bytes: int = Field(1_048_576, alias="maxWsFrameBytes", gt=0)
    idle_unload_ms: int = Field(600_000, alias="idleUnloadMs", gt=0)
    """A session with no turn, no listener and no pending question for this long leaves memory; the store
    keeps it, and the next request for it loads it again (history and session grants included)."""
    rate_limit: RateLimit = Field(default_factory=RateLimit, alias="rateLimit")
    trusted_roots: tuple[Path, ...] = Field((), alias="trustedRoots")
    """Folders whose workspaces' project settings the operator trusts (team rules apply there); elsewhere a
    project's settings only tighten."""
    from_file: bool = Field(False, exclude=True)

    def grant_for(self, principal: str) -> PrincipalGrant | None:
        return self.principals.get(principal, self.default_principal)

    def trusts(self, workspace: Path) -> bool:
        """Whether ``workspace`` (resolved, links followed) is one of ``trustedRoots`` or inside one."""
        real = Path(os.path.realpath(workspace))
        return any(real == root or root in real.parents for root in self.trusted_roots)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_config(*, cwd: Path, loopback: bool) -> ServerConfig:
    """No ``--config``: everyone gets the start directory; loopback adds every mode and replay scripts."""
    grant = PrincipalGrant(
        roots=(cwd,),
        max_mode="autonomous-trusted" if loopback else "ask-untrusted",
        allow_replay=loopback,
    )
    return ServerConfig(default_principal=grant)


def load_server_config(path: Path) -> ServerConfig:
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ServerConfigError(f"cannot read the server config {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ServerConfigError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ServerConfigError(f"{path} must hold a JSON object")
    section = raw.get("server", {})
    try:
        config = ServerConfig.model_validate(section)
    except ValidationError as exc:
        raise ServerConfigError(f'{path}: invalid "server" section:\n{exc}') from None
    base = path.resolve().parent
    principals = {
        name: grant.model_copy(update={"roots": tuple(_absolute(root, base) for root in grant.roots)})
        for name, grant in config.principals.items()
    }
    default = config.default_principal
    if default is not None:
        default = default.model_copy(update={"roots": tuple(_absolute(r, base) for r in default.roots)})
    trusted = tuple(_absolute(root, base) for root in config.trusted_roots)
    return config.model_copy(
        update={
            "principals": principals,
            "default_principal": default,
            "trusted_roots": trusted,
            "from_file": True,
        }
    )


def _absolute(root: Path, base: Path) -> Path:
    root = root.expanduser()
    return Path(os.path.realpath(root if root.is_absolute() else base / root))
