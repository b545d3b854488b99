"""The ``VectorIndex`` interface and its default, a brute-force numpy matrix."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search.embedder import Vectors
from mcp_aggregator.search.row_dots import RowDots
from mcp_aggregator.search.row_table import NO_FILTER, IndexFilter, RowTable, top_k


class VectorIndex(Protocol):
    """Nearest neighbours by cosine over unit vectors, keyed by tool key.

    Every row carries its server and skill ids so searches can be filtered.
    """

    def __len__(self) -> int: ...

    def upsert(
        self,
        keys: Sequence[str],
        servers: Sequence[str],
        vectors: Vectors,
        skills: Sequence[Iterable[str]] | None = None,
    ) -> None: ...

    def remove(self, keys: Iterable[str]) -> None: ...

    def set_skills(self, key: str, skills: Iterable[str]) -> None: ...

    def vectors(self, keys: Sequence[str]) -> Vectors:
        """Stored vectors of ``keys`` that exist, in order (missing keys are skipped)."""
        ...

    def search(self, vector: Vectors, k: int, flt: IndexFilter = NO_FILTER) -> list[tuple[str, float]]:
        """Top ``k`` (key, cosine) best first."""
        ...


class NumpyVectorIndex:
    """All vectors in one float32 matrix; a search is one matrix-vector product.

    At 10,000 x 384 that is ~15 MB and well under a millisecond (see ``row_dots``), so no
    ANN structure.
    """

    def __init__(self, dimension: int) -> None:
        self._dim = dimension
        self._rows = RowTable()
        self._matrix = np.zeros((0, dimension), dtype=np.float32)
        self._dots = RowDots(dimension)

    def __len__(self) -> int:
        return len(self._rows)

    def upsert(
        self,
        keys: Sequence[str],
        servers: Sequence[str],
        vectors: Vectors,
        skills: Sequence[Iterable[str]] | None = None,
    ) -> None:
        if vectors.shape != (len(keys), self._dim):
            raise SearchError(f"expected vectors of shape ({len(keys)}, {self._dim}), got {vectors.shape}")
        for i, key in enumerate(keys):
            row, _ = self._rows.put(key, servers[i], skills[i] if skills is not None else ())
            if row >= len(self._matrix):
                grown = np.zeros((max(64, 2 * len(self._matrix)), self._dim), dtype=np.float32)
                grown[: len(self._matrix)] = self._matrix
                self._matrix = grown
            self._matrix[row] = vectors[i]
        self._dots.invalidate()

    def remove(self, keys: Iterable[str]) -> None:
        for key in keys:
            moved = self._rows.pop(key)
            if moved is not None:
                hole, last = moved
                self._matrix[hole] = self._matrix[last]
        self._dots.invalidate()

    def set_skills(self, key: str, skills: Iterable[str]) -> None:
        self._rows.set_skills(key, skills)

    def vectors(self, keys: Sequence[str]) -> Vectors:
        rows = [self._rows.row_of[k] for k in keys if k in self._rows.row_of]
        return self._matrix[rows].copy()

    @property
    def keys(self) -> list[str]:
        """Keys by row, the rows ``search_rows`` returns; changes with every upsert or removal."""
        return self._rows.keys

    def search(self, vector: Vectors, k: int, flt: IndexFilter = NO_FILTER) -> list[tuple[str, float]]:
        top, scores = self.search_rows(vector, k, flt)
        keys = self._rows.keys
        return [(keys[i], s) for i, s in zip(top.tolist(), scores.tolist(), strict=True)]

    def search_rows(
        self, vector: Vectors, k: int, flt: IndexFilter = NO_FILTER
    ) -> tuple[npt.NDArray[np.intp], Vectors]:
        """Rows (see ``keys``) and cosines of the top ``k``, best first."""
        n = len(self._rows)
        if n == 0 or k <= 0:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32)
        scores = self._dots.dots(np.asarray(vector, dtype=np.float32).reshape(1, -1), self._matrix[:n])[0]
        mask = self._rows.mask(flt)
        if mask is not None:
            scores[~mask] = -np.inf
        top = top_k(scores, k)
        top = top[np.isfinite(scores[top])]
        return top, scores[top]
