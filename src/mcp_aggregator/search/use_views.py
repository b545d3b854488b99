"""``UseViews``: past queries that led to a tool being run, as extra views search scores it by.

When a client searched and then ran one of the hits, its query says in the client's own
words what the tool is for. Each such query is kept (embedded) as a view of that tool; a
later query close to a view ranks the tool by the view, in one more ranking fused with
the BM25 and dense ones. Only views at least :data:`MIN_VIEW_SIMILARITY` close count, so a
tool used once does not rise for every query.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mcp_aggregator.search.embedder import Vectors
from mcp_aggregator.search.ranking import Rows
from mcp_aggregator.search.tool_table import ToolTable

MIN_VIEW_SIMILARITY = 0.6
"""The cosine of a paraphrase with the all-MiniLM family (sentence-transformers' own
paraphrase-mining examples score ~0.6-0.9); unrelated requests stay below ~0.4."""
MAX_VIEWS_PER_TOOL = 32
"""The most recent views kept per tool: enough wordings, bounded memory per tool."""


class UseViews:
    """Views (query text, vector) per tool key, newest last. Not thread-safe: the owner
    (``ToolSearch``) holds its lock around every call."""

    def __init__(self, dimension: int) -> None:
        self._dimension = dimension
        self._views: dict[str, dict[str, Vectors]] = {}
        self._matrix: Vectors | None = None
        self._keys: list[str] = []

    def __len__(self) -> int:
        return sum(len(v) for v in self._views.values())

    def add(self, key: str, query: str, vector: Vectors) -> None:
        views = self._views.setdefault(key, {})
        views.pop(query, None)
        views[query] = vector
        while len(views) > MAX_VIEWS_PER_TOOL:
            del views[next(iter(views))]
        self._matrix = None

    def clear(self) -> None:
        self._views.clear()
        self._matrix = None

    def queries(self, key: str) -> list[str]:
        return list(self._views.get(key, {}))

    def ranking(self, vector: Vectors, table: ToolTable, allowed: Callable[[str], bool]) -> Rows:
        """Table rows of the tools with a view at least ``MIN_VIEW_SIMILARITY`` close to
        ``vector``, closest first; tools not in ``table`` or not ``allowed`` are skipped."""
        if not self._views:
            return np.zeros(0, dtype=np.intp)
        if self._matrix is None:
            self._keys = [key for key, views in self._views.items() for _ in views]
            rows = [v for views in self._views.values() for v in views.values()]
            self._matrix = np.stack(rows).astype(np.float32) if rows else np.zeros((0, self._dimension), np.float32)
        sims = np.einsum("ij,j->i", self._matrix, vector)  # no BLAS threads
        best: dict[str, float] = {}
        for i in np.flatnonzero(sims >= MIN_VIEW_SIMILARITY).tolist():
            key = self._keys[i]
            best[key] = max(best.get(key, -1.0), float(sims[i]))
        ordered = sorted((k for k in best if allowed(k)), key=lambda k: (-best[k], k))
        return table.rows(ordered)
