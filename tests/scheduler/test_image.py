"""The worker image recipe: the apt mirror it reuses, the overlay holding only the worker's import closure,
the inputs digest that decides whether a rebuild is needed, and the built image itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from seepient.scheduler.image import (
    DEFAULT_TAG,
    INPUTS_LABEL,
    WORKER_ENTRYPOINT,
    WORKER_USER,
    _stage_overlay,
    apt_mirror,
    worker_image_inputs,
)
from tests.scheduler.worker_env import worker_image_fixture  # noqa: F401 - registers the session fixture


def test_the_mirror_comes_from_deb822_sources_and_skips_security(tmp_path: Path) -> None:
    sources = tmp_path / "sources.list.d"
    sources.mkdir()
    (sources / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n\n"
        "Types: deb\n# a comment: here\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n"
    )
    assert apt_mirror((sources,)) == "http://mirror.example/debian"


def test_the_mirror_comes_from_a_one_line_list(tmp_path: Path) -> None:
    listing = tmp_path / "sources.list"
    listing.write_text("# deb http://old/ bookworm main\ndeb http://mirror.example/debian bookworm main\n")
    assert apt_mirror((listing,)) == "http://mirror.example/debian"
    assert apt_mirror((tmp_path / "missing",)) is None


def test_the_overlay_holds_the_worker_closure_and_nothing_else_of_seepient(tmp_path: Path) -> None:
    _stage_overlay(tmp_path)
    package = tmp_path / "usr/local/lib/python3.11/dist-packages/seepient"
    top = sorted(p.name for p in package.iterdir())
    assert top == ["__init__.py", "_lazy_exports.py", "_version.py", "execution", "protocol", "scheduler"]
    assert sorted(p.name for p in (package / "scheduler").glob("*.py")) == ["__init__.py", "worker.py"]
    site = package.parent
    assert (site / "pydantic").is_dir() and (site / "rfc8785").is_dir()
    assert not (site / "cryptography").exists() and not (site / "aiohttp").exists()


def test_the_overlay_alone_is_enough_to_import_the_worker(tmp_path: Path) -> None:
    """The closure is a list kept by hand: a module the worker's imports reach and the list lacks would make
    every worker exit before its first dispatch, so the overlay is imported with nothing else on the path."""
    _stage_overlay(tmp_path)
    site = tmp_path / "usr/local/lib/python3.11/dist-packages"
    probe = f"import sys; sys.path.insert(0, {str(site)!r}); import seepient.scheduler.worker"
    done = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_inputs_digest_is_stable() -> None:
    assert worker_image_inputs() == worker_image_inputs()


def test_the_built_image_is_labelled_with_its_inputs_and_runs_unprivileged(worker_image: str) -> None:
    done = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{json .Config}}", DEFAULT_TAG],
        capture_output=True,
        text=True,
    )
    config = json.loads(done.stdout)
    assert config["Labels"][INPUTS_LABEL] == worker_image_inputs()
    assert config["User"] == WORKER_USER
    assert config["Entrypoint"] == list(WORKER_ENTRYPOINT)
