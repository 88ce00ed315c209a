"""Every Seepient model keeps its validator unbuilt until first use, and the shared record base is immutable
and strict."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys

import pytest
from pydantic import BaseModel, ValidationError

import seepient
from seepient.protocol.frozen import FrozenModel, deferred_config, loaded_models

# The REST API's bodies: FastAPI wraps each in a TypeAdapter when the routes are made, and a deferred model
# there loses the parameter's alias (a 500 on the first request); the server is long-lived, so they cost once.
_BUILT_WITH_THE_ROUTES = ("seepient.surfaces.server.schemas", "seepient.surfaces.server.console_routes")


def _seepient_models() -> list[type[BaseModel]]:
    for info in pkgutil.walk_packages(seepient.__path__, prefix="seepient."):
        importlib.import_module(info.name)
    return list(loaded_models())


def test_every_model_defers_building_its_validator() -> None:
    models = _seepient_models()
    assert len(models) > 100  # the walk found the models, not a handful
    eager = sorted(
        f"{m.__module__}.{m.__qualname__}"
        for m in models
        if not m.model_config.get("defer_build") and not m.__module__.startswith(_BUILT_WITH_THE_ROUTES)
    )
    assert eager == [], "declare these with deferred_config(...) or on FrozenModel"


def test_importing_the_run_path_builds_no_validator() -> None:
    # In a fresh interpreter, so that no other test has used a model yet.
    code = (
        "import seepient.surfaces.cli.app, seepient.runtime.assembly, seepient.tools.builtin\n"
        "from seepient.protocol.frozen import loaded_models\n"
        "print(sorted(m.__qualname__ for m in loaded_models() if m.__pydantic_complete__))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    built = set(ast.literal_eval(done.stdout.strip()))
    # These three have module-level instances (the genesis anchor, the classifier's tool, the default usage),
    # and every run uses them anyway.
    assert built <= {"Anchor", "ToolSpec", "Usage"}


class _Point(FrozenModel):
    x: int


def test_a_deferred_model_still_validates_and_stays_frozen() -> None:
    assert _Point.__pydantic_complete__ is False
    assert _Point(x="3").x == 3  # type: ignore[arg-type]
    assert _Point.__pydantic_complete__ is True
    with pytest.raises(ValidationError):
        _Point(x=1, y=2)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        _Point(x=1).x = 2  # type: ignore[misc]


def test_deferred_config_keeps_the_options_it_is_given() -> None:
    config = deferred_config(extra="allow", populate_by_name=True)
    assert config == {"defer_build": True, "extra": "allow", "populate_by_name": True}


def test_a_long_lived_process_can_build_every_deferred_model_at_once() -> None:
    code = (
        "import seepient.surfaces.server.run\n"
        "from seepient.protocol.frozen import build_deferred_models, loaded_models\n"
        "before = sum(1 for m in loaded_models() if not m.__pydantic_complete__)\n"
        "left = build_deferred_models()\n"
        "after = [m.__qualname__ for m in loaded_models() if not m.__pydantic_complete__]\n"
        "print(before, left, after)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, rest = done.stdout.split(" ", 1)
    assert int(before) > 50 and rest.strip() == "[] []"
