"""``ServerIndex``: server-level dense rankings (tool centroid and server description)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from mcp_aggregator.search.embedder import Vectors, l2_normalise
from mcp_aggregator.search.ranking import Scores, reciprocal_rank_fusion, step_scores
from mcp_aggregator.search.row_dots import RowDots

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
        self._code_of: dict[str, int] = {}
        self._last_mask: tuple[frozenset[str], npt.NDArray[np.bool_]] | None = None
        self._matrix = np.zeros((0, 2, dimension), dtype=np.float32)
        self._dots = RowDots(dimension)

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        """Servers in name order, as of the last ``refresh``; a new list after each change."""
        return self._names

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
        self._code_of = {name: code for code, name in enumerate(self._names)}
        self._last_mask = None
        self._name_array = np.array(self._names, dtype=np.str_)
        zero = np.zeros(self._dim, dtype=np.float32)
        self._matrix = np.stack(
            [np.stack([self._centroids[s], self._described.get(s, zero)]) for s in self._names]
        ).reshape(len(self._names), 2, self._dim)
        self._dots.invalidate()

    def rankings(
        self, query_vectors: Vectors, allowed: Collection[str] | None, vectors_of: VectorsOf
    ) -> list[list[str]]:
        """Servers by centroid and by description, best first, for a query and its steps.

        ``query_vectors`` has the whole query in row 0 and its steps after it; ``allowed``
        restricts the servers (None: all).
        """
        orders = self._orders(query_vectors, allowed, vectors_of)
        return [self._name_array[order].tolist() for order in orders]

    def fused_scores(self, query_vectors: Vectors, allowed: Collection[str] | None, vectors_of: VectorsOf) -> Scores:
        """Reciprocal-rank-fusion score of each server over both ``rankings``, aligned with
        ``names`` (read it after this call, which may refresh); 0 for a server not allowed.

        Computed with arrays: a search at 10,000 tools must not loop over every server.
        """
        return reciprocal_rank_fusion(self._orders(query_vectors, allowed, vectors_of), len(self._names))

    def _orders(
        self, query_vectors: Vectors, allowed: Collection[str] | None, vectors_of: VectorsOf
    ) -> list[npt.NDArray[np.intp]]:
        self.refresh(vectors_of)
        if not self._names:
            return [np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)]
        # Rows alternate centroid, description per server: (q, s * 2) -> (2, s, q).
        dots = self._dots.dots(query_vectors, self._matrix.reshape(-1, self._dim))
        sims = dots.reshape(len(dots), len(self._names), 2).transpose(2, 1, 0)
        keep = None if allowed is None else self._mask(allowed)
        out = []
        for sim in sims:
            order = np.argsort(-step_scores(sim), kind="stable")
            out.append(order if keep is None else order[keep[order]])
        return out

    def _mask(self, allowed: Collection[str]) -> npt.NDArray[np.bool_]:
        # Kept for the next search, which almost always allows the same servers.
        key = allowed if isinstance(allowed, frozenset) else frozenset(allowed)
        if self._last_mask is not None and self._last_mask[0] == key:
            return self._last_mask[1]
        keep = np.zeros(len(self._names), dtype=np.bool_)
        keep[[code for name in key if (code := self._code_of.get(name)) is not None]] = True
        self._last_mask = (key, keep)
        return keep
