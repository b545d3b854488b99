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


BLOCK_COLUMNS = 4096
"""Columns per block of ``NumpyVectorIndex``: 6 MB at 384 dimensions, the most an upsert
copies; a search makes one product per block (three at 10,000 tools: 0.6 ms of CPU
against 0.4 for one matrix)."""


class NumpyVectorIndex:
    """All vectors in float32 blocks of columns; a search is one matrix-vector product each.

    The vectors are kept transposed, one column per row of ``keys``: the layout
    ``row_dots``' kernel streams, handed to it as it is, so the vectors are held once (a
    row-major copy beside it cost 15 MB more at 10,000 x 384). Row ``r`` is column
    ``r % BLOCK_COLUMNS`` of block ``r // BLOCK_COLUMNS``; every block is full but the last,
    which is exactly as wide as the rows it holds (spare columns would be scored by every
    search). Growing copies only that last block: one matrix made again by each upsert held
    the old and the new, 29 MB at once, when the last round of a 10,000-tool start added its
    rows. At 10,000 x 384 a search takes about a millisecond, so no ANN structure.
    """

    def __init__(self, dimension: int) -> None:
        self._dim = dimension
        self._rows = RowTable()
        self._blocks: list[Vectors] = []

    def __len__(self) -> int:
        return len(self._rows)

    def _width(self) -> int:
        return sum(block.shape[1] for block in self._blocks)

    def _resize(self, width: int) -> None:
        """Blocks exactly ``width`` columns wide in all, keeping the first ``width`` columns."""
        full, rest = divmod(width, BLOCK_COLUMNS)
        wanted = [BLOCK_COLUMNS] * full + ([rest] if rest else [])
        blocks = self._blocks[: len(wanted)]
        for i, columns in enumerate(wanted):
            if i < len(blocks) and blocks[i].shape[1] == columns:
                continue
            block = np.empty((self._dim, columns), dtype=np.float32)
            if i < len(blocks):
                kept = min(columns, blocks[i].shape[1])
                block[:, :kept] = blocks[i][:, :kept]
                blocks[i] = block
            else:
                blocks.append(block)
        self._blocks = blocks

    def _column(self, row: int) -> Vectors:
        block, column = divmod(row, BLOCK_COLUMNS)
        found: Vectors = self._blocks[block][:, column]
        return found

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
        if len(self._rows) > self._width():
            self._resize(len(self._rows))
        values = np.asarray(vectors, dtype=np.float32)
        for i, row in enumerate(rows):
            block, column = divmod(row, BLOCK_COLUMNS)
            self._blocks[block][:, column] = values[i]

    def remove(self, keys: Iterable[str]) -> None:
        for key in keys:
            moved = self._rows.pop(key)
            if moved is not None:
                hole, last = moved
                self._column(hole)[:] = self._column(last)
        if len(self._rows) < self._width():
            self._resize(len(self._rows))

    def set_skills(self, key: str, skills: Iterable[str]) -> None:
        self._rows.set_skills(key, skills)

    def vectors(self, keys: Sequence[str]) -> Vectors:
        rows = [self._rows.row_of[k] for k in keys if k in self._rows.row_of]
        if not rows:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.stack([self._column(row) for row in rows])

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
        query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        scores = np.concatenate([row_dots(query, block)[0] for block in self._blocks])
        mask = self._rows.mask(flt)
        if mask is not None:
            scores[~mask] = -np.inf
        top = top_k(scores, k)
        top = top[np.isfinite(scores[top])]
        return top, scores[top]
