"""One root exception: every exception class defined anywhere in ``seepient`` derives from ``SeepientError``
through one of its families, and each family is a direct child of the root."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import seepient
from seepient.protocol.errors import FAMILIES, SeepientError, family_of


def _modules() -> list[str]:
    return sorted(info.name for info in pkgutil.walk_packages(seepient.__path__, prefix="seepient."))


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == name:
                found[f"{name}.{value.__qualname__}"] = value
    return found


def test_every_exception_class_has_the_root_and_a_family() -> None:
    classes = _exception_classes()
    assert len(classes) > 60  # the walk found the package's exceptions, not an empty import
    orphans = sorted(name for name, cls in classes.items() if not issubclass(cls, SeepientError))
    assert orphans == []
    familyless = sorted(
        name
        for name, cls in classes.items()
        if cls not in FAMILIES and cls is not SeepientError and family_of(cls) is None
    )
    assert familyless == []


def test_families_are_direct_children_of_the_root() -> None:
    assert all(family.__bases__ == (SeepientError,) for family in FAMILIES)
    assert len(set(FAMILIES)) == len(FAMILIES)


def test_classes_that_were_builtin_errors_are_still_caught_as_such() -> None:
    from seepient.net.url import UrlError
    from seepient.protocol.refusals import SandboxUnavailable
    from seepient.tools.patch_format import PatchError

    assert issubclass(UrlError, ValueError) and issubclass(PatchError, ValueError)
    assert issubclass(SandboxUnavailable, RuntimeError)
