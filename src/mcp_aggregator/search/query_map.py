"""``QueryMap``: a linear map applied to query vectors only, after the model embeds them.

A square matrix ``W`` learnt on the cached vectors of public query -> tool pairs
(``scripts/fit_query_map.py``): a query's vector ``q`` becomes ``normalise(q @ W)`` while
tool vectors stay as the model gives them, so the embedding cache and the index are
untouched and the map can be dropped or replaced without re-embedding anything. It is
fitted from the identity and pulled back towards it, so it corrects the model's habits
on tool queries rather than replacing the model.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search.embedder import Vectors, l2_normalise


class QueryMap:
    """A ``dimension`` x ``dimension`` float32 matrix for row vectors (``q @ matrix``)."""

    def __init__(self, matrix: np.ndarray) -> None:
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise SearchError(f"a query map must be a square matrix, not one of shape {matrix.shape}")
        if not np.isfinite(matrix).all():
            raise SearchError("a query map must hold finite numbers only")
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)

    @property
    def dimension(self) -> int:
        return int(self.matrix.shape[0])

    @classmethod
    def load(cls, path: Path, *, expected_sha256: str | None, dimension: int) -> QueryMap:
        """The map stored at ``path`` (``numpy.save`` format, float16 or float32).

        Raises ``SearchError`` when the file is missing, is not a matrix, is not the pinned
        file (``expected_sha256``), or does not fit the embedder's ``dimension``."""
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise SearchError(f"query map {path} cannot be read: {exc}") from exc
        if expected_sha256 is not None and (actual := hashlib.sha256(raw).hexdigest()) != expected_sha256:
            raise SearchError(
                f"query map {path} has sha256 {actual}, expected {expected_sha256}: "
                "the file is not the one this version of mcp-aggregator ships (reinstall it)"
            )
        try:
            with path.open("rb") as fh:
                matrix = np.load(fh, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise SearchError(f"query map {path} is not a numpy array file: {exc}") from exc
        query_map = cls(np.asarray(matrix, dtype=np.float32))
        if query_map.dimension != dimension:
            raise SearchError(
                f"query map {path} is {query_map.dimension}x{query_map.dimension} "
                f"but the embedder's vectors have {dimension} dimensions"
            )
        return query_map

    def save(self, path: Path) -> None:
        """Stores the map in float16 (half the size; ~1e-3 off, far below what ranks feel)."""
        with path.open("wb") as fh:
            np.save(fh, self.matrix.astype(np.float16), allow_pickle=False)

    def apply(self, vectors: Vectors) -> Vectors:
        """``vectors`` (query rows) mapped and L2-normalised again."""
        return l2_normalise(vectors @ self.matrix)
