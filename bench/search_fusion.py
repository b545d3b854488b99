"""Learned fusion: a logistic regression over the signals the hand-set engines fuse.

Run: ``.venv/bin/python bench/search_fusion.py --data PATH/TO/tooldata [--model tools]``.

Per (query, tool) the features are BM25 per field (name, description, parameters,
server), the dense cosine (whole query, and best clause of a multi-part request), the
server's best tool and its description/centroid cosine, each min-max normalised over the
catalogue for that query, plus two exact matches: the tool's name words and the server's
name words in the query. The regression is fit on the public training pairs (each query
ranked among the tools of its own source, negatives taken from the top of the dense and
BM25 rankings), never on LiveMCPBench or the development set, which it is then measured on
beside the shipped engine. Inference is one dot product per candidate.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import numpy.typing as npt

from mcp_aggregator.search import SearchSettings, ToolDoc, ToolSearch, build_embedder
from mcp_aggregator.search.embedder import Embedder
from mcp_aggregator.search.embedding_cache import EmbeddingCache
from mcp_aggregator.text import split_identifier
from search_engines import FieldsEngine, clauses
from search_eval import DataSet, devset, evaluate, livemcpbench

FEATURES = (
    "bm25 name",
    "bm25 description",
    "bm25 parameters",
    "bm25 server",
    "dense",
    "dense best clause",
    "server best tool",
    "server text",
    "name in query",
    "server in query",
)
Floats = npt.NDArray[np.float32]
_WORDS = re.compile(r"[a-z0-9]+")


def _minmax(x: Floats) -> Floats:
    lo, hi = float(x.min()), float(x.max())
    out: Floats = (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)
    return out


class FusionFeatures:
    """The features of every tool of a catalogue for a query (rows: tools)."""

    def __init__(self, docs: Sequence[ToolDoc], embedder: Embedder, cache: EmbeddingCache) -> None:
        self.engine = FieldsEngine(docs, embedder, cache)
        self.keys = self.engine.keys
        self._names = [" ".join(split_identifier(d.name)) for d in docs]
        self._servers = [" ".join(split_identifier(d.server)) for d in docs]

    def __call__(self, query: str) -> Floats:
        e = self.engine
        parts = clauses(query)
        e.prepare([query])
        lexical, dense, server_text = e._signals[query]
        best_clause = dense
        if parts:
            best_clause = np.max(np.stack([e._signals[c][1] for c in parts]), axis=0)
        best = np.full(e._n_servers, -1.0, dtype=np.float32)
        np.maximum.at(best, e._server_of, dense)
        words = " " + " ".join(_WORDS.findall(query.lower())) + " "
        name_hit = np.array([f" {n} " in words for n in self._names], dtype=np.float32)
        server_hit = np.array([f" {s} " in words for s in self._servers], dtype=np.float32)
        cols = [_minmax(lexical[j]) for j in range(4)]
        cols += [_minmax(dense), _minmax(best_clause), _minmax(best)[e._server_of], _minmax(server_text)[e._server_of]]
        cols += [name_hit, server_hit]
        return np.stack(cols, axis=1).astype(np.float32)


def training_rows(
    data: Path, embedder: Embedder, cache: EmbeddingCache, per_source: int, seed: int, pool: int
) -> tuple[Floats, Floats]:
    """Features and labels of sampled public training queries, each among its source's tools."""
    rng = random.Random(seed)
    tools: dict[str, list[ToolDoc]] = defaultdict(list)
    ids: dict[str, str] = {}
    for line in (data / "tools.jsonl").open():
        row = json.loads(line)
        t = row["tool"]
        server, name = str(t.get("server") or row["source"]), str(t.get("name") or "")
        params = t.get("parameters") if isinstance(t.get("parameters"), dict) else {}
        doc = ToolDoc(f"{server}.{name}", server, name, str(t.get("description") or ""), "", {"properties": params})
        tools[row["source"]].append(doc)
        ids[row["id"]] = doc.key
    gold: dict[tuple[str, str], set[str]] = defaultdict(set)
    for line in (data / "train.jsonl").open():
        row = json.loads(line)
        if row["tool_id"] in ids:
            gold[(row["source"], row["query"])].add(ids[row["tool_id"]])
    xs, ys = [], []
    by_source: dict[str, list[tuple[str, set[str]]]] = defaultdict(list)
    for (source, query), keys in gold.items():
        by_source[source].append((query, keys))
    for source, queries in sorted(by_source.items()):
        rng.shuffle(queries)
        queries = queries[:per_source]
        # The sampled queries' tools, their servers' other tools, then random ones up to ``pool``.
        every = list({d.key: d for d in tools[source]}.values())
        wanted = {k for _, keys in queries for k in keys}
        servers = {d.server for d in every if d.key in wanted}
        docs = [d for d in every if d.server in servers]
        rest = [d for d in every if d.server not in servers]
        rng.shuffle(rest)
        docs += rest[: max(0, pool - len(docs))]
        features = FusionFeatures(docs, embedder, cache)
        for query, keys in queries:
            x = features(query)
            top = set(np.argsort(-x[:, 4])[:30].tolist()) | set(np.argsort(-x[:, :4].sum(1))[:30].tolist())
            rows = sorted(top | {i for i, k in enumerate(features.keys) if k in keys})
            xs.append(x[rows])
            ys.append(np.array([features.keys[i] in keys for i in rows], dtype=np.float32))
        print(f"  {source}: {len(queries)} queries over {len(docs)} tools", flush=True)
    return np.concatenate(xs), np.concatenate(ys)


def fit(x: Floats, y: Floats) -> tuple[Floats, float]:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000).fit(x, y)
    return model.coef_[0].astype(np.float32), float(model.intercept_[0])


def learned_ranker(data: DataSet, embedder: Embedder, cache: EmbeddingCache, coef: Floats) -> Any:
    features = FusionFeatures(data.docs, embedder, cache)

    def rank(query: str) -> list[str]:
        scores = features(query) @ coef
        return [features.keys[i] for i in np.argsort(-scores, kind="stable")[:50]]

    return rank


async def main(args: argparse.Namespace) -> None:
    embedder = build_embedder(SearchSettings.model_validate({"onnx_model": args.model}))
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "cache.db")
        print(f"fitting on {args.data} with {embedder.model_id}", flush=True)
        x, y = training_rows(args.data, embedder, cache, args.per_source, args.seed, args.pool)
        coef, intercept = fit(x, y)
        weights = dict(zip(FEATURES, [round(float(c), 4) for c in coef], strict=True))
        print(f"{len(y)} rows, {int(y.sum())} positive; weights {weights}")
        out: dict[str, Any] = {"model": args.model, "weights": weights, "intercept": intercept}
        for data in (livemcpbench(), devset()):
            search = ToolSearch(SearchSettings(cache_path=Path(tmp) / "cache.db"), embedder)
            await search.upsert(data.docs)
            shipped = evaluate(lambda q, s=search: [h.key for h in s.search(q, 50)], data.tasks)["all"]
            search.close()
            learned = evaluate(learned_ranker(data, embedder, cache, coef), data.tasks)["all"]
            out[data.name] = {"shipped": shipped, "learned fusion": learned}
            print(f"{data.name}: shipped {shipped}\n{' ' * len(data.name)}  learned {learned}")
        cache.close()
    await anyio.Path(args.json.parent).mkdir(parents=True, exist_ok=True)
    await anyio.Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="folder with train.jsonl and tools.jsonl")
    parser.add_argument("--model", default="base", choices=["base", "tools"], help="search.onnx_model")
    parser.add_argument("--per-source", type=int, default=150, help="training queries sampled per source")
    parser.add_argument("--pool", type=int, default=600, help="tools per source each query is ranked among")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "search_fusion.json")
    anyio.run(main, parser.parse_args())
