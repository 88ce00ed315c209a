"""Stand-ins at the embedding seam, since torch and sentence-transformers cannot be installed here: a small
deterministic embedder (signed hashing of character trigrams, so a misspelt word still lands near the right
one while BM25 misses it) and a stand-in ``sentence_transformers`` package exposing the same public
constructor and methods, which refuses to load unless told to stay offline."""

from __future__ import annotations

import hashlib
import math
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path

DIMENSION = 256


def trigram_vector(text: str, dimension: int = DIMENSION) -> list[float]:
    vector = [0.0] * dimension
    for word in re.findall(r"\w+", text.lower()):
        padded = f" {word} "
        for i in range(len(padded) - 2):
            digest = int.from_bytes(
                hashlib.blake2b(padded[i : i + 3].encode(), digest_size=8).digest(), "big"
            )
            vector[digest % dimension] += 1.0 if digest >> 63 else -1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class TrigramEmbedder:
    """An ``Embedder`` that remembers every batch it was asked to encode."""

    def __init__(self, model_id: str = "test/trigram", dimension: int = DIMENSION) -> None:
        self.model_id = model_id
        self.dimension = dimension
        self.batches: list[list[str]] = []

    @property
    def encoded(self) -> list[str]:
        return [text for batch in self.batches for text in batch]

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return [trigram_vector(text, self.dimension) for text in texts]


_PACKAGE = f'''
"""Stand-in for sentence_transformers (tests only): same constructor and methods the real one offers."""

import hashlib, math, os, re
from pathlib import Path

LOADS = []


class SentenceTransformer:
    def __init__(self, model_name_or_path, *, local_files_only=False, device=None, **kwargs):
        offline = {{key: os.environ.get(key) for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}}
        LOADS.append({{"source": model_name_or_path, "local_files_only": local_files_only, "env": offline}})
        if not local_files_only or offline["HF_HUB_OFFLINE"] != "1":
            raise RuntimeError("stand-in: this load would reach the network")
        if not Path(model_name_or_path).is_dir():
            raise OSError(f"{{model_name_or_path}} is not a local folder and offline mode is on")

    def get_sentence_embedding_dimension(self):
        return {DIMENSION}

    def encode(self, sentences, normalize_embeddings=False, show_progress_bar=None, **kwargs):
        return [_vector(text) for text in sentences]


{textwrap.dedent(__import__("inspect").getsource(trigram_vector)).replace("trigram_vector", "_vector")}
'''


def write_sentence_transformers(folder: Path) -> Path:
    """Write the stand-in package into ``folder`` (to put on the import path) and return ``folder``."""
    package = folder / "sentence_transformers"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(_PACKAGE.replace("DIMENSION", str(DIMENSION)))
    return folder
