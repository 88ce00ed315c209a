"""Tenancy checks for a new session: the workspace lies under the principal's roots, the mode is within its
cap, and the model is one the configuration offers. Each refusal says what was refused and why."""

from __future__ import annotations

import os
from pathlib import Path

from seepient.config.settings import normalise_mode
from seepient.protocol.errors import AuthError
from seepient.surfaces.server.config import MODE_ORDER, PrincipalGrant


class TenancyError(AuthError):
    """A request asked for something outside what the principal was granted (HTTP 403)."""


def _under(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _is(path: Path, kind: str) -> bool:
    # Names too long, permission denied and the like mean "not usable here", never a server error.
    try:
        return path.is_dir() if kind == "dir" else path.is_file()
    except OSError:
        return False


def _real_roots(grant: PrincipalGrant) -> tuple[Path, ...]:
    return tuple(Path(os.path.realpath(root)) for root in grant.roots)


def check_workspace(raw: str, grant: PrincipalGrant) -> Path:
    """The real workspace directory for ``raw``, or ``TenancyError``.

    ``realpath`` resolves every symlink and ``..`` before the comparison, so a link inside a root that
    points outside it, or ``root/../elsewhere``, is judged by where it really leads.
    """
    if not raw or "\x00" in raw:
        raise TenancyError("workspace must be a non-empty path")
    # No ``~`` expansion: it would name the server's users' homes, which are none of a client's business.
    path = Path(raw)
    if not path.is_absolute():
        raise TenancyError(f"workspace {raw!r} must be an absolute path")
    real = Path(os.path.realpath(path))
    roots = _real_roots(grant)
    if not _under(real, roots):
        raise TenancyError(f"workspace {raw} is outside the roots granted to you")
    if not _is(real, "dir"):
        raise TenancyError(f"workspace {raw} is not a directory")
    return real


def check_mode(raw: str | None, grant: PrincipalGrant) -> str:
    mode = normalise_mode(raw or ("ask-untrusted" if "ask-untrusted" in _allowed(grant) else "always-ask"))
    if mode not in MODE_ORDER:
        raise TenancyError(f"unknown mode {raw!r}; choose one of {', '.join(MODE_ORDER)}")
    if MODE_ORDER.index(mode) > MODE_ORDER.index(grant.max_mode):
        raise TenancyError(f"mode {mode!r} is more permissive than your limit {grant.max_mode!r}")
    return mode


def _allowed(grant: PrincipalGrant) -> tuple[str, ...]:
    return MODE_ORDER[: MODE_ORDER.index(grant.max_mode) + 1]


def check_model(raw: str, grant: PrincipalGrant) -> str:
    """The model spec to open, or ``TenancyError``.

    A ``replay:`` spec names a file the server would read, so it is taken only where replay is allowed and
    only for a script inside the principal's roots: a model spec can never read the server's own files.
    """
    spec = raw.strip()
    provider, colon, rest = spec.partition(":")
    if not colon or not provider or not rest:
        raise TenancyError(f"model {raw!r} must be provider:model")
    if provider == "replay":
        if not grant.allow_replay:
            raise TenancyError("replay: models are not allowed for you on this server")
        script = Path(rest)
        if not script.is_absolute():
            raise TenancyError(f"the replay script {rest!r} must be an absolute path")
        real = Path(os.path.realpath(script))
        if not _under(real, _real_roots(grant)) or not _is(real, "file"):
            raise TenancyError(f"the replay script {rest} is not a file inside the roots granted to you")
        return f"replay:{real}"
    if spec not in grant.models:
        offered = ", ".join(grant.models) or "none"
        raise TenancyError(f"model {spec!r} is not offered to you (offered: {offered})")
    return spec
