"""The ``Embedder`` protocol every embedding backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``embed`` is synchronous and may block for a while (model inference or an HTTP call):
    async callers run it in a worker thread. It returns an array of shape
    ``(len(texts), dimension)``; ``dimension == 0`` means the embedder is lexical only.
    ``model_id`` names the model and its version so cached vectors of another model are
    never reused.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


class NoneEmbedder:
    """Embeds nothing: search falls back to the lexical index alone."""

    model_id = "none"
    dimension = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        return np.zeros((len(texts), 0), dtype=np.float32)


def l2_normalise(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length; all-zero rows stay zero."""
    arr = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    out: Vectors = (arr / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
    return out
