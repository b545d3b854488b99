"""Tool-search quality and latency on LiveMCPBench: BM25 vs dense vs the shipped hybrid.

Run: ``.venv/bin/python bench/search_bench.py``; prints a table and writes
``bench/results/search.json``. Quality is measured on the 527 real tools and 94 tasks;
latency and the embedding cache on a catalogue of ``--size`` tools made by replicating
the 527 with varied names and descriptions.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from mcp_aggregator.search import SearchSettings, ToolDoc, ToolSearch, build_embedder
from mcp_aggregator.search.embedder import Embedder
from mcp_aggregator.search.lexical_index import LexicalIndex, tokenize
from mcp_aggregator.search.row_table import IndexFilter
from mcp_aggregator.search.vector_index import NumpyVectorIndex

DATA = Path(__file__).parent / "data" / "livemcpbench"
RESULTS = Path(__file__).parent / "results" / "search.json"
Ranker = Callable[[str], list[str]]


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "server"


def load() -> tuple[list[ToolDoc], list[dict[str, Any]]]:
    docs = []
    for line in (DATA / "tools_flat.jsonl").read_text().splitlines():
        t = json.loads(line)
        server = slug(t["server"])
        docs.append(
            ToolDoc(
                f"{server}.{t['name']}",
                server,
                t["name"],
                t["description"] or "",
                t["server_description"] or "",
                t["input_schema"] or {},
            )
        )
    tasks = [json.loads(line) for line in (DATA / "queries_flat.jsonl").read_text().splitlines()]
    return docs, [t for t in tasks if set(t["gold_tool_names"]) - set(t["unresolved_names"])]


def evaluate(ranker: Ranker, docs: Sequence[ToolDoc], tasks: Sequence[dict[str, Any]]) -> dict[str, float]:
    by_key = {d.key: d for d in docs}
    sums = dict.fromkeys(["recall@5", "recall@10", "ndcg@10", "hit@5", "server_recall@5"], 0.0)
    for task in tasks:
        gold = set(task["gold_tool_names"]) - set(task["unresolved_names"])
        names = [by_key[k].name for k in ranker(task["query"])]
        sums["recall@5"] += len(set(names[:5]) & gold) / len(gold)
        sums["recall@10"] += len(set(names[:10]) & gold) / len(gold)
        sums["hit@5"] += float(bool(set(names[:5]) & gold))
        seen: set[str] = set()
        dcg = 0.0
        for rank, name in enumerate(names[:10]):
            if name in gold and name not in seen:
                seen.add(name)
                dcg += 1 / math.log2(rank + 2)
        sums["ndcg@10"] += dcg / sum(1 / math.log2(i + 2) for i in range(min(10, len(gold))))
        gold_servers = {slug(s) for s in task["gold_servers"]}
        servers = list(dict.fromkeys(by_key[k].server for k in ranker(task["query"])))[:5]
        sums["server_recall@5"] += len(set(servers) & gold_servers) / len(gold_servers)
    return {name: round(total / len(tasks), 3) for name, total in sums.items()}


def bm25_ranker(docs: Sequence[ToolDoc]) -> Ranker:
    index = LexicalIndex()
    for d in docs:
        index.upsert(d.key, d.server, tokenize(d.lexical_text()))
    return lambda q: [k for k, _ in index.search(q, 50)]


def dense_ranker(docs: Sequence[ToolDoc], search: ToolSearch) -> Ranker:
    embedder = search.embedder
    index = NumpyVectorIndex(embedder.dimension)
    index.upsert([d.key for d in docs], [d.server for d in docs], search.tool_vectors([d.key for d in docs]))
    return lambda q: [k for k, _ in index.search(embedder.embed([q])[0], 50, IndexFilter())]


_VERBS = [
    "quickly",
    "safely",
    "in bulk",
    "for teams",
    "with retries",
    "from the cache",
    "for reports",
    "over the API",
    "on demand",
    "with paging",
    "for admins",
    "in the background",
    "with filters",
    "for audits",
    "via webhooks",
    "for mobile",
    "with previews",
    "for archives",
    "at scale",
]


def replicate(docs: Sequence[ToolDoc], size: int) -> list[ToolDoc]:
    """``size`` tools: the originals, then copies on renamed servers with varied text."""
    out = list(docs)
    r = 0
    while len(out) < size:
        r += 1
        phrase = _VERBS[r % len(_VERBS)]
        for d in docs:
            if len(out) >= size:
                break
            server = f"{d.server}-{r}"
            name = f"{d.name}_{phrase.split()[-1]}{r}"
            out.append(
                ToolDoc(
                    f"{server}.{name}",
                    server,
                    name,
                    f"{d.description} ({phrase}, edition {r})",
                    d.server_description,
                    d.input_schema,
                )
            )
    return out


def percentile(values: Sequence[float], pct: float) -> float:
    return float(np.percentile(np.array(values), pct))


def timed_searches(search: ToolSearch, queries: Sequence[str], *, repeat: int = 1) -> list[float]:
    laps = []
    for _ in range(repeat):
        for q in queries:
            start = time.perf_counter()
            search.search(q, 10)
            laps.append((time.perf_counter() - start) * 1000)
    return laps


async def catalogue_bench(
    embedder: Embedder, docs: Sequence[ToolDoc], tasks: Sequence[dict[str, Any]], size: int
) -> dict[str, Any]:
    catalogue = replicate(docs, size)
    tmp = Path(tempfile.mkdtemp(prefix="search-bench-"))
    try:
        settings = SearchSettings(cache_path=tmp / "embeddings.db")
        cold = ToolSearch(settings, embedder)
        start = time.perf_counter()
        embedded_cold = await cold.upsert(catalogue, progress=progress_bar)
        cold_s = time.perf_counter() - start
        cold.close()
        warm = ToolSearch(settings, embedder)
        start = time.perf_counter()
        embedded_warm = await warm.upsert(catalogue)
        warm_s = time.perf_counter() - start
        task_queries = [t["query"] for t in tasks]
        short_queries = [" ".join(d.description.split()[:6]) or d.name for d in docs[::5] if d.description.isascii()]
        task_laps = timed_searches(warm, task_queries)
        short_laps = timed_searches(warm, short_queries)
        cached_laps = timed_searches(warm, task_queries, repeat=2)[len(task_queries) :]
        warm.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "tools": len(catalogue),
        "cold_embed_s": round(cold_s, 1),
        "cold_embedded": embedded_cold,
        "warm_embed_s": round(warm_s, 2),
        "warm_embedded": embedded_warm,
        "p50_ms_task_queries": round(percentile(task_laps, 50), 2),
        "p95_ms_task_queries": round(percentile(task_laps, 95), 2),
        "p50_ms_short_queries": round(percentile(short_laps, 50), 2),
        "p95_ms_short_queries": round(percentile(short_laps, 95), 2),
        "p95_ms_query_embedding_cached": round(percentile(cached_laps, 95), 2),
        "short_queries": len(short_queries),
        "task_queries": len(task_queries),
    }


def progress_bar(done: int, total: int) -> None:
    width = 40
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r  embedding [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


async def main(size: int) -> None:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    docs, tasks = load()
    embedder = build_embedder(SearchSettings())
    hybrid = ToolSearch(SearchSettings(), embedder)
    await hybrid.upsert(docs)
    quality = {
        "bm25": evaluate(bm25_ranker(docs), docs, tasks),
        "dense": evaluate(dense_ranker(docs, hybrid), docs, tasks),
        "hybrid (shipped)": evaluate(lambda q: [h.key for h in hybrid.search(q, 50)], docs, tasks),
    }
    print(f"LiveMCPBench: {len(docs)} tools, {len(tasks)} tasks, embedder {embedder.model_id}")
    cols = list(next(iter(quality.values())))
    print(f"{'system':<18}" + "".join(f"{c:>17}" for c in cols))
    for name, row in quality.items():
        print(f"{name:<18}" + "".join(f"{row[c]:>17.3f}" for c in cols))
    print(f"\nCatalogue of {size} tools (cold embedding takes minutes on 2 cores):")
    latency = await catalogue_bench(embedder, docs, tasks, size)
    for key, value in latency.items():
        print(f"  {key:<32} {value}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "embedder": embedder.model_id,
                "tasks": len(tasks),
                "tools": len(docs),
                "quality": quality,
                "catalogue": latency,
                "python": sys.version.split()[0],
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10_000, help="tools in the latency catalogue")
    anyio.run(main, parser.parse_args().size)
