"""The ``VectorIndex`` interface and its default, a brute-force numpy matrix."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search.embedder import Vectors
from mcp_aggregator.search.row_dots import row_dots
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

    The matrix is kept transposed, one column per row of ``keys``: the layout ``row_dots``'
    kernel streams, handed to it as it is, so the vectors are held once (a row-major copy
    beside it cost 15 MB more at 10,000 x 384). It is exactly as wide as there are rows, and
    made again by each upsert that adds rows (one copy, as the transposed copy's rebuild
    was). At 10,000 x 384 a search takes about a millisecond, so no ANN structure.
    """

    def __init__(self, dimension: int) -> None:
        self._dim = dimension
        self._rows = RowTable()
        self._columns = np.zeros((dimension, 0), dtype=np.float32)

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
        rows = [
            self._rows.put(key, servers[i], skills[i] if skills is not None else ())[0] for i, key in enumerate(keys)
        ]
        if len(self._rows) > self._columns.shape[1]:
            # Exactly as wide as the rows: spare columns would be scored by every search.
            grown = np.empty((self._dim, len(self._rows)), dtype=np.float32)
            grown[:, : self._columns.shape[1]] = self._columns
            self._columns = grown
        if rows:
            self._columns[:, rows] = np.asarray(vectors, dtype=np.float32).T

    def remove(self, keys: Iterable[str]) -> None:
        for key in keys:
            moved = self._rows.pop(key)
            if moved is not None:
                hole, last = moved
                self._columns[:, hole] = self._columns[:, last]
        if len(self._rows) < self._columns.shape[1]:
            self._columns = np.ascontiguousarray(self._columns[:, : len(self._rows)])

    def set_skills(self, key: str, skills: Iterable[str]) -> None:
        self._rows.set_skills(key, skills)

    def vectors(self, keys: Sequence[str]) -> Vectors:
        rows = [self._rows.row_of[k] for k in keys if k in self._rows.row_of]
        return np.ascontiguousarray(self._columns[:, rows].T)

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
        scores = row_dots(np.asarray(vector, dtype=np.float32).reshape(1, -1), self._columns)[0]
        mask = self._rows.mask(flt)
        if mask is not None:
            scores[~mask] = -np.inf
        top = top_k(scores, k)
        top = top[np.isfinite(scores[top])]
        return top, scores[top]
