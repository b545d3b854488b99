"""BM25 over tool names (split into words), descriptions and their server's name and text."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from mcp_aggregator.search.row_table import NO_FILTER, IndexFilter, RowTable, top_k
from mcp_aggregator.text import search_terms

Scores = npt.NDArray[np.float32]


class LexicalIndex:
    """Okapi BM25 over documents keyed by tool key, with server and skill filters.

    Documents change rarely and queries are frequent, so term weights are precomputed
    into posting arrays (one slice per term), rebuilt lazily after a change. Documents are
    kept as arrays of term ids so a rebuild is a few array operations, not a loop per term.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self._k1 = k1
        self._b = b
        self._rows = RowTable()
        self._term_ids: dict[str, int] = {}
        self._docs: list[npt.NDArray[np.int32]] = []
        # Postings of term id t: rows _post_rows[_starts[t]:_starts[t + 1]] with their weights.
        self._starts = np.zeros(1, dtype=np.intp)
        self._post_rows = np.zeros(0, dtype=np.intp)
        self._post_weights: Scores = np.zeros(0, dtype=np.float32)
        self._dirty = False

    def __len__(self) -> int:
        return len(self._rows)

    def upsert(self, key: str, server: str, text_terms: Sequence[str], skills: Iterable[str] = ()) -> None:
        row, new = self._rows.put(key, server, skills)
        ids = self._term_ids
        for term in set(text_terms).difference(ids):  # set operations and map() keep the loop in C
            ids[term] = len(ids)
        doc = np.fromiter(map(ids.__getitem__, text_terms), dtype=np.int32, count=len(text_terms))
        if new:
            self._docs.append(doc)
        else:
            self._docs[row] = doc
        self._dirty = True

    def set_skills(self, key: str, skills: Iterable[str]) -> None:
        self._rows.set_skills(key, skills)

    def remove(self, key: str) -> None:
        moved = self._rows.pop(key)
        if moved is not None:
            hole, last = moved
            self._docs[hole] = self._docs[last]
            self._docs.pop()
            self._dirty = True

    def refresh(self) -> None:
        """Rebuilds posting arrays if documents changed; searching calls it too."""
        if not self._dirty:
            return
        n = len(self._docs)
        vocabulary = len(self._term_ids)
        counts = np.array([len(d) for d in self._docs], dtype=np.intp)
        lengths = counts.astype(np.float32)
        avgdl = float(lengths.mean()) if n else 1.0
        norm: Scores = self._k1 * (1 - self._b + self._b * lengths / max(avgdl, 1e-9))
        terms = np.concatenate(self._docs).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
        rows = np.repeat(np.arange(n, dtype=np.int64), counts)
        # Distinct (term, row) pairs, by term then row, and how often each occurs.
        pairs, tf_counts = np.unique(terms * max(n, 1) + rows, return_counts=True)
        post_terms, post_rows = np.divmod(pairs, max(n, 1))
        df = np.bincount(post_terms, minlength=vocabulary)
        idf = np.array([math.log(1 + (n - d + 0.5) / (d + 0.5)) for d in df.tolist()], dtype=np.float32)
        tf = tf_counts.astype(np.float32)
        weights = idf[post_terms] * tf * np.float32(self._k1 + 1) / (tf + norm[post_rows])
        self._starts = np.concatenate([[0], np.cumsum(df)]).astype(np.intp)
        self._post_rows = post_rows.astype(np.intp)
        self._post_weights = weights.astype(np.float32)
        self._dirty = False

    def _posting(self, term: str) -> tuple[npt.NDArray[np.intp], Scores] | None:
        tid = self._term_ids.get(term)
        if tid is None or tid + 1 >= len(self._starts):
            return None
        lo, hi = int(self._starts[tid]), int(self._starts[tid + 1])
        return (self._post_rows[lo:hi], self._post_weights[lo:hi]) if hi > lo else None

    def sole_server_with(self, term: str) -> str | None:
        """The one server whose documents contain the (tokenized) ``term``, if just one does."""
        self.refresh()
        posting = self._posting(term)
        return None if posting is None else self._rows.sole_server(posting[0])

    @property
    def keys(self) -> list[str]:
        """Keys by row, the rows ``search_rows`` returns; changes with every upsert or removal."""
        return self._rows.keys

    def search(self, query: str, k: int, flt: IndexFilter = NO_FILTER) -> list[tuple[str, float]]:
        """Top ``k`` (key, BM25 score) with a positive score, best first."""
        top, scores = self.search_rows(query, k, flt)
        keys = self._rows.keys
        return [(keys[i], s) for i, s in zip(top.tolist(), scores.tolist(), strict=True)]

    def search_rows(self, query: str, k: int, flt: IndexFilter = NO_FILTER) -> tuple[npt.NDArray[np.intp], Scores]:
        """Rows (see ``keys``) and BM25 scores of the top ``k`` with a positive score, best first."""
        self.refresh()
        n = len(self._rows)
        if n == 0 or k <= 0:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32)
        scores = np.zeros(n, dtype=np.float32)
        for term in set(search_terms(query)):
            posting = self._posting(term)
            if posting is not None:
                scores[posting[0]] += posting[1]
        mask = self._rows.mask(flt)
        if mask is not None:
            scores[~mask] = 0.0
        top = top_k(scores, k)
        top = top[scores[top] > 0.0]
        return top, scores[top]
