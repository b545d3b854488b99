"""Hard negatives mined with the base model: the tools it ranks highest for a training
query that are not the query's own.

A same-server sibling is often easy (another endpoint of one API, worded differently); the
tools the base model confuses with the right one, on the same or any other server of the
training catalogue, are what the shipped search gets wrong. The base model here is the
product's own embedder (``search.onnx_model: base``, int8 as the gateway runs it), its
vectors kept in an embedding cache under ``--cache`` so a second run embeds nothing.
LiveMCPBench and the development set are never in the catalogue mined.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from mcp_aggregator.search import SearchSettings, build_embedder
from mcp_aggregator.search.embedding_cache import EmbeddingCache, embed_cached
from search_training.pairs import Data, Pair

_BLOCK = 256


def same_tool(data: Data, a: str, b: str) -> bool:
    """Two ids of one tool (a tool copied into several sources or servers): never a
    negative of each other."""
    da, db = data.docs[a], data.docs[b]
    return da.name.lower() == db.name.lower() and da.description.strip() == db.description.strip()


def mine(data: Data, train: list[Pair], skip: int, depth: int, cache: Path) -> dict[str, list[str]]:
    """For each training query, the tools at ranks ``skip`` .. ``depth - 1`` (from 0) of the
    whole catalogue as the base model ranks it, leaving out the tools of the query's own
    request and their copies (same name and description). The ``skip`` highest are left
    out too: in a catalogue of many public APIs the very top is often another API that
    does the same thing, a negative only in name."""
    tool_ids = sorted(data.docs)
    queries = sorted({p.query for p in train})
    embedder = build_embedder(SearchSettings.model_validate({"onnx_model": "base"}))
    cache.mkdir(parents=True, exist_ok=True)
    store = EmbeddingCache(cache / "query-map-vectors.db")
    start = time.process_time()
    tool_vecs, tools_now = embed_cached(embedder, store, [data.docs[t].dense_text() for t in tool_ids], batch_size=32)
    query_vecs, queries_now = embed_cached(embedder, store, queries, batch_size=32)
    store.close()
    print(
        f"mining with {embedder.model_id}: {len(queries)} queries over {len(tool_ids)} tools, "
        f"{tools_now + queries_now} texts embedded now ({time.process_time() - start:.0f} CPU s)",
        flush=True,
    )
    gold: dict[str, set[str]] = defaultdict(set)
    for p in train:
        gold[p.query].add(p.tool_id)
    by_group: dict[str, set[str]] = defaultdict(set)
    for p in train:
        by_group[p.group].add(p.tool_id)
    for p in train:
        gold[p.query] |= by_group[p.group]
    out: dict[str, list[str]] = {}
    reach = depth + 16  # room for the request's own tools and their copies
    for b in range(0, len(queries), _BLOCK):
        block = queries[b : b + _BLOCK]
        sims = query_vecs[b : b + _BLOCK] @ tool_vecs.T
        top = np.argpartition(-sims, reach, axis=1)[:, :reach]
        for row, query in enumerate(block):
            ranked = top[row][np.argsort(-sims[row, top[row]])]
            own = gold[query]
            picked = [
                tool_ids[i]
                for i in ranked
                if tool_ids[i] not in own and not any(same_tool(data, tool_ids[i], g) for g in own)
            ]
            out[query] = picked[skip:depth]
    return out
