"""``ServerIndex``: server-level dense rankings (tool centroid and server description)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from mcp_aggregator.search.embedder import Vectors, l2_normalise
from mcp_aggregator.search.ranking import RRF_K, step_scores

VectorsOf = Callable[[Sequence[str]], Vectors]
"""Stored tool vectors of the given keys, rows in order."""


class ServerIndex:
    """Two unit vectors per server: the centroid of its tools' vectors and its description's.

    Tools and descriptions change rarely and searches are frequent, so the matrices are
    rebuilt lazily (``refresh``) for the servers that changed since the last search.
    """

    def __init__(self, dimension: int) -> None:
        self._dim = dimension
        self._tools: dict[str, dict[str, None]] = {}
        self._described: dict[str, Vectors] = {}
        self._centroids: dict[str, Vectors] = {}
        self._dirty: set[str] = set()
        self._names: list[str] = []
        self._name_array = np.zeros(0, dtype=np.str_)
        self._matrix = np.zeros((0, 2, dimension), dtype=np.float32)

    def __len__(self) -> int:
        return len(self._tools)

    def upsert(self, keys: Sequence[str], servers: Sequence[str]) -> None:
        """Records that the tools ``keys`` (of ``servers``) were added or their vectors changed."""
        for key, server in zip(keys, servers, strict=True):
            self._tools.setdefault(server, {})[key] = None
            self._dirty.add(server)

    def set_description(self, server: str, vector: Vectors) -> None:
        self._described[server] = np.asarray(vector, dtype=np.float32)
        self._dirty.add(server)

    def has_description(self, server: str) -> bool:
        return server in self._described

    def remove(self, keys: Iterable[str], servers: Iterable[str]) -> None:
        for key, server in zip(keys, servers, strict=True):
            tools = self._tools.get(server)
            if tools is not None:
                tools.pop(key, None)
                self._dirty.add(server)

    def refresh(self, vectors_of: VectorsOf) -> None:
        """Recomputes the centroids of changed servers; drops servers left without tools."""
        if not self._dirty:
            return
        for server in self._dirty:
            keys = list(self._tools.get(server, ()))
            if not keys:
                self._tools.pop(server, None)
                self._centroids.pop(server, None)
                self._described.pop(server, None)
                continue
            self._centroids[server] = l2_normalise(vectors_of(keys).mean(axis=0, keepdims=True))[0]
        self._dirty.clear()
        self._names = sorted(self._tools)
        self._name_array = np.array(self._names, dtype=np.str_)
        zero = np.zeros(self._dim, dtype=np.float32)
        self._matrix = np.stack(
            [np.stack([self._centroids[s], self._described.get(s, zero)]) for s in self._names]
        ).reshape(len(self._names), 2, self._dim)

    def rankings(
        self, query_vectors: Vectors, allowed: Collection[str] | None, vectors_of: VectorsOf
    ) -> list[list[str]]:
        """Servers by centroid and by description, best first, for a query and its steps.

        ``query_vectors`` has the whole query in row 0 and its steps after it; ``allowed``
        restricts the servers (None: all).
        """
        orders = self._orders(query_vectors, allowed, vectors_of)
        return [self._name_array[order].tolist() for order in orders]

    def fused_scores(
        self, query_vectors: Vectors, allowed: Collection[str] | None, vectors_of: VectorsOf
    ) -> dict[str, float]:
        """Reciprocal-rank-fusion score of each server over both ``rankings``.

        Computed with arrays: a search at 10,000 tools must not loop over every server.
        """
        orders = self._orders(query_vectors, allowed, vectors_of)
        total = np.zeros(len(self._names), dtype=np.float64)
        for order in orders:
            total[order] += 1.0 / (RRF_K + np.arange(1, len(order) + 1))
        return dict(zip(self._names, total.tolist(), strict=True))

    def _orders(
        self, query_vectors: Vectors, allowed: Collection[str] | None, vectors_of: VectorsOf
    ) -> list[npt.NDArray[np.intp]]:
        self.refresh(vectors_of)
        if not self._names:
            return [np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)]
        # einsum keeps numpy's single-threaded loop (see NumpyVectorIndex.search).
        sims = np.einsum("skd,qd->ksq", self._matrix, np.asarray(query_vectors, dtype=np.float32))
        keep = None if allowed is None else np.isin(self._name_array, list(allowed))
        out = []
        for sim in sims:
            order = np.argsort(-step_scores(sim), kind="stable")
            out.append(order if keep is None else order[keep[order]])
        return out
