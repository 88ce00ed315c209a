"""Keys a settings file holds that its schema does not know: where each one is, and the key that was meant.

A misspelt key (``"permisions"``) would otherwise be ignored without a word. Loading decides what a finding
costs (``settings.load_settings``): an error in the managed file and anywhere it touches permission rules (a
lost deny rule loosens policy), a warning elsewhere.
"""

from __future__ import annotations

import difflib
import functools
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

KEYS_READ_ELSEWHERE = frozenset({"$schema", "server"})
"""Top-level keys another reader owns: ``server`` is ``seepient serve``'s block of its ``--config`` file,
``$schema`` points an editor at a schema."""

_HINTS = {
    # Claude Code's spellings of what Seepient calls otherwise.
    "permissions.defaultMode": "permissions.mode",
    "model": "models.default",
}


@dataclass(frozen=True)
class UnknownKey:
    """``path`` is the dotted key as the file spells it (``models.providers.local.baseURL``); ``suggestion`` the
    dotted key that was probably meant, when one is close."""

    file: str
    path: str
    suggestion: str | None = None

    @property
    def touches_permissions(self) -> bool:
        """Whether the key sits in the permission rules or was probably meant to be them."""
        return (
            self.path.split(".")[0] == "permissions" or (self.suggestion or "").split(".")[0] == "permissions"
        )

    @property
    def message(self) -> str:
        hint = f"; did you mean {self.suggestion!r}?" if self.suggestion else ""
        return f"{self.path}: unknown key, ignored{hint}"

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


def find_unknown_keys(data: Mapping[str, Any], schema: type[BaseModel], file: str) -> list[UnknownKey]:
    """Every key of ``data`` (a settings file's object) that ``schema`` has no field for, depth first."""
    found: list[UnknownKey] = []
    _walk(data, schema, (), file, found, top=True)
    return found


def _walk(
    data: Mapping[str, Any],
    model: type[BaseModel],
    at: tuple[str, ...],
    file: str,
    found: list[UnknownKey],
    *,
    top: bool = False,
) -> None:
    spellings = _spellings(model)
    for key, value in data.items():
        if not isinstance(key, str):
            continue
        field = spellings.get(key)
        if field is None:
            if not (top and key in KEYS_READ_ELSEWHERE):
                path = (*at, key)
                found.append(UnknownKey(file, _dotted(path), _suggest(path, spellings, top=top)))
            continue
        _descend(value, model.model_fields[field].annotation, (*at, key), file, found)


def _descend(value: Any, annotation: Any, at: tuple[str, ...], file: str, found: list[UnknownKey]) -> None:
    """Follow ``value`` into whatever settings model its annotation holds (``X | None``, ``dict[str, X]``,
    ``list[X]``); plain values and free-form mappings (``env``, ``headers``) have no keys to check."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        for arg in get_args(annotation):
            _descend(value, arg, at, file, found)
        return
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if isinstance(value, Mapping):
            _walk(value, annotation, at, file, found)
        return
    args = get_args(annotation)
    if origin is dict and len(args) == 2 and isinstance(value, Mapping):
        for name, item in value.items():
            _descend(item, args[1], (*at, str(name)), file, found)
    elif origin is list and args and isinstance(value, list):
        for index, item in enumerate(value):
            _descend(item, args[0], (*at[:-1], f"{at[-1]}[{index}]"), file, found)


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path)


def _spellings(model: type[BaseModel]) -> dict[str, str]:
    """Every accepted spelling of each field (its name and its alias) → the field's name."""
    out: dict[str, str] = {}
    for name, field in model.model_fields.items():
        out[name] = name
        if field.alias:
            out[field.alias] = name
    return out


def _suggest(path: tuple[str, ...], spellings: Mapping[str, str], *, top: bool) -> str | None:
    key = path[-1]
    dotted = _dotted(path)
    if dotted in _HINTS:
        return _HINTS[dotted]
    close = closest_key(key, spellings)
    if close is not None:
        return _dotted((*path[:-1], close))
    if top:
        # A key of some section written at the top level (``"allow": [...]``).
        elsewhere = _top_level_index().get(key.casefold())
        if elsewhere:
            return elsewhere
    return None


def closest_key(key: str, known: Iterable[str]) -> str | None:
    """The known key ``key`` is most probably a misspelling of (case aside), or None when none is close."""
    by_fold = {spelling.casefold(): spelling for spelling in known}
    close = difflib.get_close_matches(key.casefold(), list(by_fold), n=1, cutoff=0.75)
    return by_fold[close[0]] if close else None


@functools.cache
def _top_level_index() -> dict[str, str]:
    """The keys of each top-level section → ``section.key``, for keys written one level too high."""
    from seepient.config.settings import Settings

    index: dict[str, str] = {}
    for section, field in Settings.model_fields.items():
        inner = field.annotation
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            continue
        for spelling in _spellings(inner):
            index.setdefault(spelling.casefold(), f"{field.alias or section}.{spelling}")
    return index
