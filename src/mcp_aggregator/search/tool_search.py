"""``ToolSearch``: hybrid (dense + BM25) search over the tools of all upstream servers."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence

import anyio.to_thread
import numpy as np

from mcp_aggregator.search.config import SearchSettings
from mcp_aggregator.search.embedder import Embedder, Vectors
from mcp_aggregator.search.embedding_cache import EmbeddingCache, EmbeddingStore, ProgressCallback, embed_cached
from mcp_aggregator.search.hit_order import HEAD, after_best, with_alternatives
from mcp_aggregator.search.implicit_needs import DEFAULT_NEEDS, NeedMatcher
from mcp_aggregator.search.lexical_index import LexicalIndex
from mcp_aggregator.search.query_map import QueryMap
from mcp_aggregator.search.ranking import (
    Rows,
    Scores,
    groups_by_best_row,
    normalise_query,
    reciprocal_rank_fusion,
    step_scores,
    sub_queries,
    top_rows,
)
from mcp_aggregator.search.row_table import IndexFilter
from mcp_aggregator.search.server_index import ServerIndex
from mcp_aggregator.search.server_names import ServerNames
from mcp_aggregator.search.tool_doc import SearchHit, SearchResults, ToolDoc, excerpt
from mcp_aggregator.search.tool_table import ToolTable
from mcp_aggregator.search.use_views import UseViews
from mcp_aggregator.search.vector_index import NumpyVectorIndex, VectorIndex
from mcp_aggregator.text import search_terms

_CANDIDATES = 250
_QUERY_CACHE_SIZE = 512
_NEED_CACHE_SIZE = 256


class ToolSearch:
    """Searchable view of the tool catalogue.

    Writes (``upsert``, ``remove*``, ``set_skills``) must be called from one thread (the
    event loop); ``upsert`` embeds and tokenizes in worker threads. ``search`` may run in
    any thread (``Gateway.search_tools`` runs it in a worker so the loop keeps serving): it
    embeds the query outside the lock, then ranks under the lock that writes hold only
    while they change the indexes.
    """

    def __init__(
        self,
        settings: SearchSettings,
        embedder: Embedder,
        *,
        vector_index: VectorIndex | None = None,
        cache: EmbeddingStore | None = None,
        query_map: QueryMap | None = None,
    ) -> None:
        self._settings = settings
        self._embedder = embedder
        self._query_map = query_map
        self._dense = embedder.dimension > 0
        self._vectors: VectorIndex = vector_index or NumpyVectorIndex(embedder.dimension)
        self._lexical = LexicalIndex()
        self._servers = ServerIndex(embedder.dimension)
        self._server_texts: dict[str, str] = {}
        self._cache: EmbeddingStore = cache if cache is not None else EmbeddingCache(settings.cache_path)
        self._docs: dict[str, ToolDoc] = {}
        self._keys_by_name: dict[str, dict[str, None]] = {}
        self._query_vectors: OrderedDict[str, Vectors] = OrderedDict()
        self._query_vectors_lock = threading.Lock()
        self._lock = threading.Lock()
        self._table: ToolTable | None = None
        # Rows of the lexical and vector indexes mapped to table rows, per table version:
        # a search then ranks in arrays, with no key lookups per candidate.
        self._lexical_rows: Rows = np.zeros(0, dtype=np.intp)
        self._vector_rows: Rows | None = None
        needs = DEFAULT_NEEDS if settings.implicit_needs is None else settings.implicit_needs
        self._needs = NeedMatcher(needs)
        self._need_tools: dict[tuple[str, IndexFilter], str | None] = {}
        self._need_tools_version = -1
        self._server_names: ServerNames | None = None
        self._unembedded: dict[str, ToolDoc] = {}
        self._uses = UseViews(embedder.dimension)
        self.version = 0
        """Incremented on every change of the catalogue or of a tool's skills."""

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, key: object) -> bool:
        return key in self._docs

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    def get(self, key: str) -> ToolDoc | None:
        return self._docs.get(key)

    def docs(self) -> list[ToolDoc]:
        return list(self._docs.values())

    def close(self) -> None:
        self._cache.close()

    async def upsert(self, docs: Sequence[ToolDoc], *, progress: ProgressCallback | None = None) -> int:
        """Adds or replaces ``docs``; returns how many tool texts had to be embedded (cache misses).

        In two steps: the docs enter the lexical index at once, then their vectors once
        embedded. In between ``pending`` counts them and a search ranks by words alone
        (``SearchResults.complete`` is False), never by vectors that miss some tools.
        Server description texts are embedded too (through the same cache) but not counted.

        Skill ids already set on a stored tool are kept when the new doc carries none.
        """
        docs = [self._keep_skills(d) for d in docs]
        terms = await anyio.to_thread.run_sync(lambda: _lexical_terms(docs))
        with self._lock:
            for doc, doc_terms in zip(docs, terms, strict=True):
                old = self._docs.get(doc.key)
                if old is not None and old.name != doc.name:
                    self._forget_name(old)
                self._docs[doc.key] = doc
                self._keys_by_name.setdefault(doc.name, {})[doc.key] = None
                self._lexical.upsert(doc.key, doc.server, doc_terms, doc.skill_ids)
                if self._dense:
                    self._unembedded[doc.key] = doc
            self._lexical.refresh()
            self._changed()
        if not self._dense or not docs:
            return 0
        texts = [d.dense_text() for d in docs]
        try:
            vectors, embedded = await anyio.to_thread.run_sync(lambda: self.embed_texts(texts, progress=progress))
            todo = self._undescribed(docs)
            described = await anyio.to_thread.run_sync(lambda: self._server_vectors(todo))
        except BaseException:
            with self._lock:  # the docs stay searchable by words; a later upsert embeds them
                self._changed()
            raise
        with self._lock:
            # A doc removed or replaced while it was embedded keeps what happened since.
            live = [i for i, d in enumerate(docs) if self._unembedded.get(d.key) is d]
            keys, servers = [docs[i].key for i in live], [docs[i].server for i in live]
            # Indexed in place when every doc is live (a start): a copy is 15 MB at 10,000 tools.
            live_vectors = vectors if len(live) == len(docs) else vectors[live]
            self._vectors.upsert(keys, servers, live_vectors, [docs[i].skill_ids for i in live])
            for server, (text, vector) in described.items():
                self._servers.set_description(server, vector)
                self._server_texts[server] = text
            self._servers.upsert(keys, servers)
            for key in keys:
                del self._unembedded[key]
            self._changed()
        return embedded

    async def add_uses(self, uses: Sequence[tuple[str, str]]) -> int:
        """Adds past uses, (query, tool key) pairs: each query becomes a view the tool is
        also ranked by (see ``UseViews``). Returns how many were added; nothing without a
        dense embedder. A tool not in the catalogue keeps its views for when it returns."""
        if not self._dense or not uses:
            return 0
        texts = [normalise_query(query) for query, _ in uses]
        vectors, _ = await anyio.to_thread.run_sync(lambda: self.embed_texts(texts))
        with self._lock:
            for (_, key), text, vector in zip(uses, texts, vectors, strict=True):
                self._uses.add(key, text, vector)
            self.version += 1
        return len(uses)

    def clear_uses(self) -> None:
        """Forgets every past use (after a purge)."""
        with self._lock:
            self._uses.clear()
            self.version += 1

    def use_queries(self, key: str) -> list[str]:
        """The past queries ``key`` is also ranked by, oldest first."""
        with self._lock:
            return self._uses.queries(key)

    @property
    def pending(self) -> int:
        """Tools searchable by words only: their vectors are still being computed."""
        return len(self._unembedded)

    def _changed(self) -> None:
        self._table = None
        self._server_names = None
        self.version += 1

    def _undescribed(self, docs: Sequence[ToolDoc]) -> dict[str, str]:
        """Server description texts of ``docs`` not yet embedded as they are now."""
        texts = {d.server: d.server_text() for d in docs}
        return {
            server: text
            for server, text in texts.items()
            if self._server_texts.get(server) != text or not self._servers.has_description(server)
        }

    def _server_vectors(self, todo: dict[str, str]) -> dict[str, tuple[str, Vectors]]:
        if not todo:
            return {}
        vectors, _ = self.embed_texts(list(todo.values()))
        return {server: (text, vectors[i]) for i, (server, text) in enumerate(todo.items())}

    def _keep_skills(self, doc: ToolDoc) -> ToolDoc:
        old = self._docs.get(doc.key)
        if old is None or doc.skill_ids or not old.skill_ids:
            return doc
        return ToolDoc(
            doc.key,
            doc.server,
            doc.name,
            doc.description,
            doc.server_description,
            doc.input_schema,
            old.skill_ids,
        )

    def embed_texts(self, texts: Sequence[str], *, progress: ProgressCallback | None = None) -> tuple[Vectors, int]:
        """Vectors of ``texts`` through the cache (blocking; call from a worker thread)."""
        return embed_cached(
            self._embedder, self._cache, texts, batch_size=self._settings.embed_batch_size, progress=progress
        )

    def remove(self, keys: Iterable[str]) -> list[ToolDoc]:
        """Removes tools; returns the docs that were present."""
        with self._lock:
            removed = [doc for key in keys if (doc := self._docs.pop(key, None)) is not None]
            gone = [d.key for d in removed]
            for doc in removed:
                self._forget_name(doc)
                self._unembedded.pop(doc.key, None)
            if self._dense:
                self._vectors.remove(gone)
                self._servers.remove(gone, [d.server for d in removed])
            for key in gone:
                self._lexical.remove(key)
            self._lexical.refresh()
            if removed:
                self._changed()
        return removed

    def remove_server(self, server: str) -> list[ToolDoc]:
        return self.remove([d.key for d in self._docs.values() if d.server == server])

    def _forget_name(self, doc: ToolDoc) -> None:
        keys = self._keys_by_name.get(doc.name)
        if keys is not None:
            keys.pop(doc.key, None)
            if not keys:
                del self._keys_by_name[doc.name]

    def set_skills(self, key: str, skill_ids: Sequence[str]) -> None:
        doc = self._docs.get(key)
        if doc is None:
            return
        skills = tuple(skill_ids)
        with self._lock:
            self._docs[key] = ToolDoc(
                doc.key, doc.server, doc.name, doc.description, doc.server_description, doc.input_schema, skills
            )
            self._lexical.set_skills(key, skills)
            if self._dense:
                self._vectors.set_skills(key, skills)
            self.version += 1

    def tool_vectors(self, keys: Sequence[str]) -> Vectors:
        """Stored vectors of the existing ``keys`` (rows in order, missing keys skipped)."""
        if not self._dense:
            return np.zeros((0, 0), dtype=np.float32)
        with self._lock:
            return self._vectors.vectors([k for k in keys if k in self._docs])

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        server: str | None = None,
        skill: str | None = None,
        allowed_servers: Collection[str] | None = None,
    ) -> SearchResults:
        """The ``k`` best tools for ``query``, best first.

        ``server`` and ``skill`` restrict to one server / skill; ``allowed_servers`` (the
        CONNECTED and DEGRADED servers) restricts to those. An empty query returns [].
        While some tools wait for their vectors (``pending``) every tool is ranked by words
        alone and the results say so (``complete`` False, ``pending`` set).
        Blocking (it embeds the query): call it from a worker thread on an event loop.
        """
        if not query.strip() or k <= 0 or not self._docs:
            return SearchResults()
        flt = _filter(server, skill, allowed_servers)
        if flt.servers is not None and not flt.servers:
            return SearchResults()
        vectors = None
        need_vectors: dict[str, Vectors] = {}
        if self._dense and not self._unembedded:  # outside the lock: a write waits for ranking, never the model
            text = normalise_query(query)
            vectors = self._query_embeddings([text, *sub_queries(text)])
            if needs := self._needs.needs_of(query):
                need_vectors = dict(zip(needs, self._query_embeddings(needs), strict=True))
        with self._lock:
            if not self._docs:
                return SearchResults()
            pending = len(self._unembedded)
            if pending and vectors is not None:  # tools arrived while the query was embedded
                vectors, need_vectors = None, {}
            return SearchResults(self._ranked(query, k, flt, vectors, need_vectors), pending=pending)

    def _ranked(
        self, query: str, k: int, flt: IndexFilter, vectors: Vectors | None, need_vectors: dict[str, Vectors]
    ) -> list[SearchHit]:
        # A depth independent of k keeps a smaller k's results a prefix of a larger k's.
        n = max(_CANDIDATES, k)
        table = self._tool_table()
        lexical, _ = self._lexical.search_rows(query, n, flt)
        rankings, weights = [self._lexical_rows[lexical]], [1.0]
        dense_server_scores = None
        if vectors is not None:
            dense = self._settings.dense_weight
            rankings.append(self._dense_ranking(table, vectors, n, flt))
            weights.append(dense)
            if len(self._uses):
                rankings.append(self._uses.ranking(vectors[0], table, lambda key: _passes(self._docs[key], flt)))
                weights.append(1.0)
            by_vectors = self._servers.fused_scores(vectors, flt.servers, self._vectors.vectors)
            dense_server_scores = table.server_scores(self._servers.names, by_vectors)
            if dense != 1.0:
                dense_server_scores = dense_server_scores * dense
        fused = reciprocal_rank_fusion(rankings, len(table), weights=weights)
        candidates = np.flatnonzero(fused)
        tool_scores = fused[candidates]
        servers = table.server_of[candidates]
        server_scores = reciprocal_rank_fusion([groups_by_best_row(tool_scores, servers)], len(table.servers))
        if dense_server_scores is not None:
            server_scores += dense_server_scores
        scores = tool_scores + server_scores[servers]
        depth = max(k, HEAD)  # the head decides the alternatives, whatever k is
        hits = [
            self._hit(table.keys[candidates[i]], float(scores[i])) for i in top_rows(scores, candidates, depth).tolist()
        ]
        named = self._named_server_tools(query, table, candidates, scores) if self._settings.named_servers else []
        joining = [*named, *self._need_tools_of(need_vectors, flt)]
        hits = after_best(hits, (self._hit(key, 0.0) for key in joining))
        return with_alternatives(hits, lambda hit: self._alternatives(hit, flt), self._settings.alternatives)[:k]

    def _alternatives(self, hit: SearchHit, flt: IndexFilter) -> list[SearchHit]:
        """The same tool (by name) on other servers: filesystem clones, several ``fetch``
        servers. The client sees every server that can do the step and picks the one it may
        use."""
        return [
            self._hit(key, 0.0)
            for key in self._keys_by_name.get(hit.name, ())
            if key != hit.key and _passes(self._docs[key], flt)
        ]

    def _named_server_tools(self, query: str, table: ToolTable, candidates: Rows, scores: Scores) -> list[str]:
        """The best candidate of each server ``query`` names (see ``server_names``)."""
        if self._server_names is None:
            self._server_names = ServerNames({d.server for d in self._docs.values()}, self._lexical.sole_server_with)
        out = []
        servers = table.server_of[candidates]
        for name in self._server_names.named_in(query):
            code = table.code_of(name)
            own = np.flatnonzero(servers == code) if code is not None else np.zeros(0, dtype=np.intp)
            if len(own):
                out.append(table.keys[candidates[own[np.argmax(scores[own])]]])
        return out

    def _need_tools_of(self, need_vectors: dict[str, Vectors], flt: IndexFilter) -> list[str]:
        """The tool of each need the query implies, given their vectors (dense embedders only:
        needs are phrases)."""
        return [key for need, vec in need_vectors.items() if (key := self._need_tool(need, vec, flt)) is not None]

    def _need_tool(self, need: str, vector: Vectors, flt: IndexFilter) -> str | None:
        """The tool closest to ``need`` among those ``flt`` allows, if close enough.

        A need's phrase never changes, so its answer is kept until the catalogue changes.
        """
        if self._need_tools_version != self.version or len(self._need_tools) > _NEED_CACHE_SIZE:
            self._need_tools.clear()
            self._need_tools_version = self.version
        cache_key = (need, flt)
        if cache_key not in self._need_tools:
            best = self._vectors.search(vector, 1, flt)
            ok = bool(best) and best[0][1] >= self._settings.implicit_need_min_similarity
            self._need_tools[cache_key] = best[0][0] if ok else None
        return self._need_tools[cache_key]

    def _tool_table(self) -> ToolTable:
        if self._table is None:
            table = ToolTable((doc.key, doc.server) for doc in self._docs.values())
            self._lexical_rows = table.rows(self._lexical.keys)
            vectors = self._vectors
            self._vector_rows = table.rows(vectors.keys) if isinstance(vectors, NumpyVectorIndex) else None
            self._table = table
        return self._table

    def _dense_ranking(self, table: ToolTable, vectors: Vectors, n: int, flt: IndexFilter) -> Rows:
        """Table rows by ``step_scores`` of the whole query (row 0) and its steps (rows after)."""
        if len(vectors) == 1 and self._vector_rows is not None and isinstance(self._vectors, NumpyVectorIndex):
            rows, _ = self._vectors.search_rows(vectors[0], n, flt)
            return self._vector_rows[rows]
        hits = self._vectors.search(vectors[0], n, flt)
        if len(vectors) == 1:
            return table.rows(key for key, _ in hits)
        candidates = dict.fromkeys(key for key, _ in hits)
        for vec in vectors[1:]:
            candidates.update(dict.fromkeys(key for key, _ in self._vectors.search(vec, n, flt)))
        keys = list(candidates)
        scores = step_scores(np.einsum("ij,kj->ik", self._vectors.vectors(keys), vectors))  # no BLAS threads
        order = np.argsort(-scores, kind="stable")[:n]
        return table.rows(keys[i] for i in order)

    def _query_embeddings(self, texts: list[str]) -> Vectors:
        found: dict[str, Vectors] = {}
        cache = self._query_vectors
        with self._query_vectors_lock:
            for text in texts:
                if text in cache:
                    cache.move_to_end(text)
                    found[text] = cache[text]
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        # The whole query (first) is as long as all its steps: in one batch every step would
        # be padded to its length, which doubled the p95 of a multi-step task.
        for batch in (missing[:1], missing[1:]):
            if not batch:
                continue
            embedded = self._embedder.embed(batch)
            if self._query_map is not None:
                embedded = self._query_map.apply(embedded)
            with self._query_vectors_lock:
                for text, vec in zip(batch, embedded, strict=True):
                    found[text] = cache[text] = vec
                    if len(cache) > _QUERY_CACHE_SIZE:
                        cache.popitem(last=False)
        return np.stack([found[t] for t in texts])

    def _hit(self, key: str, score: float) -> SearchHit:
        doc = self._docs[key]
        return SearchHit(doc.key, doc.server, doc.name, excerpt(doc.description), score, doc.skill_ids)


def _lexical_terms(docs: Sequence[ToolDoc]) -> list[list[str]]:
    """BM25 terms of each doc's ``lexical_text``; a server's text is tokenized once."""
    server_terms: dict[str, list[str]] = {}
    out = []
    for doc in docs:
        server_text = doc.server_lexical_text()
        if (shared := server_terms.get(server_text)) is None:
            shared = server_terms[server_text] = search_terms(server_text)
        out.append(search_terms(doc.own_lexical_text()) + shared)
    return out


def _passes(doc: ToolDoc, flt: IndexFilter) -> bool:
    return (flt.servers is None or doc.server in flt.servers) and (flt.skill is None or flt.skill in doc.skill_ids)


def _filter(server: str | None, skill: str | None, allowed: Collection[str] | None) -> IndexFilter:
    servers: frozenset[str] | None = None if allowed is None else frozenset(allowed)
    if server is not None:
        servers = frozenset({server}) if servers is None else servers & {server}
    return IndexFilter(servers, skill)
