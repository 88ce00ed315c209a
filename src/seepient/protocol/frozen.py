"""The pydantic configuration every Seepient model is declared with, and the immutable record base most of
them share: a model's validator is built the first time the model is used, not when its module is imported."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict


def deferred_config(**options: Any) -> ConfigDict:
    """``options`` with ``defer_build``: a ``run`` imports about 140 models and uses about 50 of them, and
    building a validator is most of what a model costs at import (issue #19)."""
    return ConfigDict(defer_build=True, **options)


class FrozenModel(BaseModel):
    """An immutable record that refuses keys it does not declare."""

    model_config = deferred_config(frozen=True, extra="forbid")


def loaded_models(base: type[BaseModel] = BaseModel) -> Iterator[type[BaseModel]]:
    """Every model class loaded so far that extends ``base`` and is declared in Seepient (not a parametrised
    generic such as ``RootModel[dict[str, Any]]``, which pydantic makes)."""
    pending = [base]
    while pending:
        for model in pending.pop().__subclasses__():
            pending.append(model)
            if model.__module__.startswith("seepient.") and not model.__pydantic_generic_metadata__["origin"]:
                yield model


def build_deferred_models(modules: Collection[str] | None = None) -> list[str]:
    """Build, now, every loaded model whose validator is still unbuilt (declared in one of ``modules``, if
    given): for a long-lived process (the server) about to take a burst of first uses, which would otherwise
    build them together, or for a session about to take its first action. Returns the names of any model that
    cannot be built yet (a name it refers to is not importable), which stay deferred."""
    return [
        f"{model.__module__}.{model.__qualname__}"
        for model in list(loaded_models())
        if (modules is None or model.__module__ in modules)
        and not model.__pydantic_complete__
        and not model.model_rebuild(raise_errors=False)
    ]
