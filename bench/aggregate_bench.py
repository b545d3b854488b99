"""Benchmarks of the aggregator query (issue 4).

Usage::

    .venv/bin/python bench/aggregate_bench.py [--quick]

Measures, against the goals (and the contract's limits):
- ranking 100 results                                   goal 2 ms   (contract 50 ms)
- ranking + dedup of 1,000 raw results to the top 100   goal 20 ms
- latency the engine adds over the slowest upstream      goal 10 ms
  (real in-process MCP servers with a fixed delay, engine vs calling them directly)
- peak memory of one query (tracemalloc)                goal 5 MB   (contract 10 MB)
- latency of queries while some servers hang             contract P90 < 5 s

Prints a table and writes ``bench/results/aggregate.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from mcp import Client
from mcp.server import MCPServer

from mcp_aggregator.aggregate import AggregatorEngine, AggregatorSettings, QueryRequest
from mcp_aggregator.aggregate.dedup import deduplicate
from mcp_aggregator.aggregate.ranking import rank_results
from mcp_aggregator.aggregate.result_extraction import RawResult

RESULTS_PATH = Path(__file__).parent / "results" / "aggregate.json"
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
QUERY = "How do I implement React hooks for state management?"
UPSTREAM_DELAY_S = 0.05
_WORDS_TEXT = """
    react hooks state management component render effect context reducer memo callback ref
    server client query cache index search vector token stream async await promise module
    package library function class method variable type schema config deploy build test
"""
WORDS = _WORDS_TEXT.split()


@dataclass
class Row:
    name: str
    samples: int
    p50: float
    p90: float
    p95: float
    unit: str
    goal: float
    limit: float | None

    @property
    def passed(self) -> bool:
        return self.p90 <= self.goal if self.unit != "MB" else self.p50 <= self.goal


def percentiles(values: Sequence[float]) -> tuple[float, float, float]:
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else [values[0]] * 99
    return cuts[49], cuts[89], cuts[94]


def make_text(rng: random.Random) -> str:
    """Random words, 200-400 characters (about 300 on average)."""
    chars = rng.randint(200, 400)
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:chars]


def near_copy(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(6):
        chars[rng.randrange(len(chars))] = rng.choice("abcdefghij ")
    return "".join(chars)


def make_corpus(servers: int, per_server: int, near_share: float, seed: int = 4) -> list[list[str]]:
    """``servers`` lists of ~300-char texts; ``near_share`` of all are near copies of others."""
    rng = random.Random(seed)
    lists = [[make_text(rng) for _ in range(per_server)] for _ in range(servers)]
    flat = [(s, i) for s in range(servers) for i in range(per_server)]
    for s, i in rng.sample(flat, int(len(flat) * near_share)):
        source_server, source_index = rng.choice(flat)
        lists[s][i] = near_copy(rng, lists[source_server][source_index])
    return lists


def raw_results(corpus: list[list[str]]) -> list[RawResult]:
    return [
        RawResult(
            server=f"server{s}",
            content=text,
            retrieved_at=NOW,
            source_time=NOW - timedelta(days=i),
            original_length=len(text),
        )
        for s, texts in enumerate(corpus)
        for i, text in enumerate(texts)
    ]


def time_sync(fn: Callable[[], object], repeat: int) -> tuple[list[float], list[float]]:
    """Wall-clock and this thread's CPU milliseconds per call.

    CPU time is reported next to wall time because on a shared machine the wall time of
    pure computation mostly measures the other tenants.
    """
    fn()
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(repeat):
        started, started_cpu = time.perf_counter_ns(), time.thread_time_ns()
        fn()
        wall.append((time.perf_counter_ns() - started) / 1e6)
        cpu.append((time.thread_time_ns() - started_cpu) / 1e6)
    return wall, cpu


def bench_ranking(repeat: int) -> list[Row]:
    results = raw_results(make_corpus(10, 10, 0.1))
    settings = AggregatorSettings()
    wall, cpu = time_sync(lambda: rank_results(results, query=QUERY, settings=settings, now=NOW), repeat)
    return [
        Row("rank 100 results (wall)", len(wall), *percentiles(wall), "ms", 2.0, 50.0),
        Row("rank 100 results (CPU)", len(cpu), *percentiles(cpu), "ms", 2.0, 50.0),
    ]


def bench_rank_dedup(repeat: int) -> list[Row]:
    results = raw_results(make_corpus(10, 100, 0.1))
    settings = AggregatorSettings()

    def run() -> None:
        ranked = rank_results(results, query=QUERY, settings=settings, now=NOW)
        deduplicate(ranked, threshold=settings.dedup_threshold, limit=100)

    wall, cpu = time_sync(run, repeat)
    return [
        Row("rank + dedup 1,000 -> top 100 (wall)", len(wall), *percentiles(wall), "ms", 20.0, None),
        Row("rank + dedup 1,000 -> top 100 (CPU)", len(cpu), *percentiles(cpu), "ms", 20.0, None),
    ]


class ClientTarget:
    def __init__(self, name: str, client: Client, tools: Sequence[mcp_types.Tool]) -> None:
        self.name = name
        self.client = client
        self.tools = list(tools)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        return await self.client.call_tool(name, arguments)


class PrebuiltTarget:
    """Answers instantly with a prepared result: isolates the engine's own memory."""

    def __init__(self, name: str, result: mcp_types.CallToolResult) -> None:
        self.name = name
        self.result = result
        self.tools = [
            mcp_types.Tool(name="search", input_schema={"type": "object", "properties": {"query": {"type": "string"}}})
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        return self.result


def search_server(name: str, docs: list[str], delay: float | None) -> MCPServer:
    app: MCPServer = MCPServer(name, log_level="WARNING")

    @app.tool()
    async def search(query: str) -> list[str]:
        """Search."""
        if delay is None:
            await anyio.Event().wait()
        else:
            await anyio.sleep(delay)
        return docs

    return app


async def connect(stack: AsyncExitStack, servers: dict[str, MCPServer]) -> list[ClientTarget]:
    targets = []
    for name, server in servers.items():
        client = await stack.enter_async_context(Client(server, cache=None))
        targets.append(ClientTarget(name, client, (await client.list_tools()).tools))
    return targets


async def call_all_directly(targets: Sequence[ClientTarget]) -> None:
    async with anyio.create_task_group() as tg:
        for target in targets:
            tg.start_soon(target.call_tool, "search", {"query": QUERY})


async def timed(fn: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter_ns()
    await fn()
    return (time.perf_counter_ns() - started) / 1e6


async def bench_added_latency(repeat: int) -> list[Row]:
    corpus = make_corpus(10, 15, 0.1)
    servers = {f"server{i}": search_server(f"server{i}", docs, UPSTREAM_DELAY_S) for i, docs in enumerate(corpus)}
    engine = AggregatorEngine(AggregatorSettings(), clock=lambda: NOW)
    request = QueryRequest(QUERY, 30)
    direct: list[float] = []
    through: list[float] = []
    async with AsyncExitStack() as stack:
        targets = await connect(stack, servers)
        await engine.query(request, targets)
        for _ in range(repeat):
            direct.append(await timed(lambda: call_all_directly(targets)))
            through.append(await timed(lambda: engine.query(request, targets)))
    added = [t - d for t, d in zip(through, direct, strict=True)]
    return [
        Row(
            f"direct fan-out, 10 servers x 15 ({UPSTREAM_DELAY_S * 1000:.0f} ms)",
            repeat,
            *percentiles(direct),
            "ms",
            UPSTREAM_DELAY_S * 1000 + 10,
            None,
        ),
        Row(
            "engine query, same servers",
            repeat,
            *percentiles(through),
            "ms",
            UPSTREAM_DELAY_S * 1000 + 10,
            None,
        ),
        Row("added latency (paired)", repeat, *percentiles(added), "ms", 10.0, None),
    ]


async def bench_memory() -> list[Row]:
    corpus = make_corpus(10, 100, 0.1)
    request = QueryRequest(QUERY, 100)
    engine = AggregatorEngine(AggregatorSettings(), clock=lambda: NOW)
    prebuilt = [
        PrebuiltTarget(f"server{i}", mcp_types.CallToolResult(content=[], structured_content={"result": docs}))
        for i, docs in enumerate(corpus)
    ]
    engine_only = await peak_mb(lambda: engine.query(request, prebuilt))
    servers = {f"server{i}": search_server(f"server{i}", docs, 0.0) for i, docs in enumerate(corpus)}
    async with AsyncExitStack() as stack:
        targets = await connect(stack, servers)
        await engine.query(request, targets)
        end_to_end = await peak_mb(lambda: engine.query(request, targets))
    return [
        Row("peak memory, engine (1,000 results)", 1, engine_only, engine_only, engine_only, "MB", 5.0, 10.0),
        Row(
            "peak memory, incl. SDK + in-process servers",
            1,
            end_to_end,
            end_to_end,
            end_to_end,
            "MB",
            5.0,
            10.0,
        ),
    ]


async def peak_mb(fn: Callable[[], Awaitable[object]]) -> float:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        await fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return (peak - base) / 1e6


async def bench_hanging(rounds: int, concurrency: int) -> Row:
    corpus = make_corpus(10, 15, 0.1)
    servers = {
        f"server{i}": search_server(f"server{i}", docs, None if i < 3 else UPSTREAM_DELAY_S)
        for i, docs in enumerate(corpus)
    }
    engine = AggregatorEngine(AggregatorSettings())
    request = QueryRequest(QUERY, 30)
    samples: list[float] = []

    async def one() -> None:
        samples.append(await timed(lambda: engine.query(request, targets)))

    async with AsyncExitStack() as stack:
        targets = await connect(stack, servers)
        for _ in range(rounds):
            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(one)
    p50, p90, p95 = (p / 1000 for p in percentiles(samples))
    name = f"query, 3 of 10 servers hang ({concurrency} concurrent, default timeouts)"
    return Row(name, len(samples), p50, p90, p95, "s", 5.0, 5.0)


def print_table(rows: Sequence[Row]) -> None:
    columns = f"{'n':>5} {'p50':>9} {'p90':>9} {'p95':>9} {'unit':>4} {'goal':>7} {'limit':>6}  ok"
    header = f"{'benchmark':<62} {columns}"
    print(header)
    print("-" * len(header))
    for r in rows:
        limit = f"{r.limit:g}" if r.limit is not None else "-"
        print(
            f"{r.name:<62} {r.samples:>5} {r.p50:>9.3f} {r.p90:>9.3f} {r.p95:>9.3f} {r.unit:>4} "
            f"{r.goal:>7g} {limit:>6}  {'yes' if r.passed else 'NO'}"
        )


async def main(quick: bool, out: Path = RESULTS_PATH) -> None:
    logging.getLogger("mcp_aggregator").setLevel(logging.ERROR)
    load_before = os.getloadavg()
    repeat = 10 if quick else 300
    rows = [*bench_ranking(repeat * 2), *bench_rank_dedup(repeat)]
    rows += await bench_added_latency(10 if quick else 100)
    rows += await bench_memory()
    rows.append(await bench_hanging(1 if quick else 2, 20))
    print_table(rows)
    await anyio.Path(out.parent).mkdir(parents=True, exist_ok=True)
    await anyio.Path(out).write_text(
        json.dumps(
            {
                "benchmark": "aggregate",
                "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "python": platform.python_version(),
                "machine": platform.machine(),
                "quick": quick,
                "cpus": os.cpu_count(),
                "load_average_before": load_before,
                "load_average_after": os.getloadavg(),
                "rows": [asdict(r) | {"passed": r.passed} for r in rows],
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nload average before/after: {load_before} / {os.getloadavg()} on {os.cpu_count()} CPUs")
    print(f"wrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (smoke run)")
    parser.add_argument("--json", type=Path, default=RESULTS_PATH, help="where to write the results")
    args = parser.parse_args()
    anyio.run(main, args.quick, args.json)
