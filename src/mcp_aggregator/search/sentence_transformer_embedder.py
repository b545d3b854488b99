"""An embedder running a sentence-transformers model from a local folder.

Needs the optional ``sentence-transformers`` package (and so PyTorch); this module is
imported only when ``search.embedder`` is ``sentence-transformers``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found, unused-ignore]

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search.embedder import Vectors, l2_normalise


class SentenceTransformerEmbedder:
    """A local sentence-transformers model; never downloads (``local_files_only``)."""

    def __init__(self, model_path: Path) -> None:
        if not model_path.is_dir():
            raise SearchError(f"sentence-transformers model folder not found: {model_path}")
        try:
            self._model = SentenceTransformer(str(model_path), device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise SearchError(f"cannot load sentence-transformers model {model_path}: {exc}") from exc
        dim = self._model.get_sentence_embedding_dimension()
        if not dim:
            raise SearchError(f"model {model_path} does not report an embedding dimension")
        self._dimension = int(dim)
        self._model_id = f"sentence-transformers:{model_path.name}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        matrix = self._model.encode(list(texts), batch_size=32, convert_to_numpy=True, show_progress_bar=False)
        return l2_normalise(np.asarray(matrix, dtype=np.float32))
