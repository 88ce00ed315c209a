"""Writing replay scripts (DESIGN §8) for tests that drive the ``replay:`` model through a real surface."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def write_script(path: Path, turns: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``turns`` to ``path`` as a replay script, JSON when the name ends in ``.json`` and YAML otherwise
    (keys in the order given), and give back ``path``."""
    if path.suffix.lower() == ".json":
        text = json.dumps(list(turns), indent=2, ensure_ascii=False)
    else:
        import yaml

        text = yaml.safe_dump([dict(turn) for turn in turns], sort_keys=False, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    return path


def new_script(folder: Path, turns: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``turns`` as the next ``script-N.yaml`` in ``folder`` (one fresh file per call, so each session a
    test opens plays its own script) and give back its path."""
    number = sum(1 for _ in folder.glob("script-*.yaml"))
    while (folder / f"script-{number}.yaml").exists():
        number += 1
    return write_script(folder / f"script-{number}.yaml", turns)
