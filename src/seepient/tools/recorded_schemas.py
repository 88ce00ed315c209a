"""The JSON schemas of the built-in tools' arguments, recorded in ``builtin_schemas.json``: a session offers
every tool at its first request, and making their schemas is ~25 ms of every start.

An entry is used only while the module that declares the arguments, the tool base and pydantic are the ones it
was recorded from (a hash of their sources and pydantic's version), so a tool edited since falls back to
making its schema; ``tests/tools/test_recorded_schemas.py`` keeps the file current. The schema only tells the
model what to send: every call is still validated by the live model. Rewrite the file with
``python -m seepient.tools.recorded_schemas``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import pkgutil
import sys
from pathlib import Path
from typing import Any

import pydantic
from pydantic import BaseModel

from seepient.protocol.frozen import loaded_models

RECORD_FILE = Path(__file__).with_name("builtin_schemas.json")
_BUILTIN_PACKAGE = "seepient.tools.builtin"
# Besides the tool's own module, what every argument schema is made with: the ToolInput base (its
# configuration and the shared argument types) and the reader of argument docstrings.
_SHARED_SOURCES = ("seepient.tools.base", "seepient.tools.attribute_docs")


def made_parameters(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema as a tool's parameters: no title, and only what a request body carries (through
    JSON once: lists, not tuples)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    return json.loads(json.dumps(schema))


def recorded_parameters(
    model: type[BaseModel], records: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The recorded parameters of a built-in tool's ``model`` while its sources are the recorded ones, else
    None (a tool that is not built in, or one edited since)."""
    if not model.__module__.startswith(_BUILTIN_PACKAGE + "."):
        return None
    entry = (_records() if records is None else records).get(_key(model))
    if entry is None or entry.get("sources") != _fingerprint(model.__module__):
        return None
    parameters: dict[str, Any] = entry["parameters"]
    return parameters


def builtin_inputs() -> list[type[BaseModel]]:
    """Every argument model declared in the built-in tools' modules, in a stable order."""
    from seepient.tools.base import ToolInput

    package = importlib.import_module(_BUILTIN_PACKAGE)
    for info in pkgutil.iter_modules(package.__path__, prefix=_BUILTIN_PACKAGE + "."):
        importlib.import_module(info.name)
    found = (
        model for model in loaded_models(ToolInput) if model.__module__.startswith(_BUILTIN_PACKAGE + ".")
    )
    return sorted(found, key=_key)


def current_records() -> dict[str, Any]:
    """What the file should hold for the tools as they are now."""
    return {
        _key(model): {"sources": _fingerprint(model.__module__), "parameters": made_parameters(model)}
        for model in builtin_inputs()
    }


def _key(model: type[BaseModel]) -> str:
    return f"{model.__module__}:{model.__qualname__}"


@functools.cache
def _records() -> dict[str, Any]:
    try:
        loaded = json.loads(RECORD_FILE.read_bytes())
    except (OSError, ValueError):
        return {}  # no record (or a damaged one): every schema is made, as before there was a file
    return loaded if isinstance(loaded, dict) else {}


@functools.cache
def _fingerprint(module: str) -> str:
    digest = hashlib.sha256(f"pydantic {pydantic.VERSION}\n".encode())
    for name in (module, *_SHARED_SOURCES):
        source = getattr(sys.modules.get(name), "__file__", None)
        try:
            digest.update(Path(source).read_bytes() if source else b"")
        except OSError:
            return ""  # a module without readable source never matches a record
    return digest.hexdigest()


def main() -> None:
    RECORD_FILE.write_text(json.dumps(current_records(), indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
