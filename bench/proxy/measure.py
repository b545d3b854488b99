"""Latency, throughput, CPU and memory of tool calls through one path."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

import anyio
from mcp import Client

from .procs import ProcessSet, RssSampler, cpu_seconds, describe

MB = 1024 * 1024


@dataclass
class Row:
    """One (transport pair, peer, concurrency) cell of the main table."""

    pair: str
    peer: str
    concurrency: int
    sessions: int = 0
    calls: int = 0
    errors: int = 0
    abandoned: int = 0
    """Calls still running at twice the row's time cap, left out of every figure."""
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0
    mean_ms: float = 0.0
    calls_per_s: float = 0.0
    cpu_ms_per_call: dict[str, float] = field(default_factory=dict)
    proxy_rss_peak_mb: float | None = None
    protocol_version: str | None = None
    load_1m: float | None = None
    """The machine's load average as the row ended: on a shared machine, read figures with it."""
    added_p50_ms: float | None = None
    throughput_pct_of_direct: float | None = None
    note: str | None = None
    """Why the cell is n/a, or where its figures come from."""
    failure: str | None = None
    round_throughput_pct: list[float] = field(default_factory=list)
    """With ``--rounds``: throughput % of direct in every round (this row is the median one)."""
    first_errors: list[str] = field(default_factory=list)
    """Up to three distinct error texts, so a row with errors says what they were."""


@dataclass(frozen=True)
class LatencySummary:
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of already sorted values (0.0 for none)."""
    if not sorted_values:
        return 0.0
    rank = math.ceil(pct / 100 * len(sorted_values))
    return sorted_values[min(len(sorted_values), max(1, rank)) - 1]


def summarize_latencies(seconds: Sequence[float]) -> LatencySummary:
    ordered = sorted(seconds)
    mean = sum(ordered) / len(ordered) if ordered else 0.0
    return LatencySummary(
        p50_ms=round(percentile(ordered, 50) * 1e3, 3),
        p95_ms=round(percentile(ordered, 95) * 1e3, 3),
        p99_ms=round(percentile(ordered, 99) * 1e3, 3),
        mean_ms=round(mean * 1e3, 3),
    )


@dataclass
class SessionPool:
    """Sessions held open by their own tasks (the SDK must close a session in the task that
    opened it), opened ``parallel`` at a time. Open failures are counted, not raised."""

    clients: list[Client] = field(default_factory=list)
    open_errors: list[str] = field(default_factory=list)
    open_seconds: float = 0.0


@contextlib.asynccontextmanager
async def open_sessions(
    make_client: Callable[[], Client], count: int, parallel: int = 32
) -> AsyncIterator[SessionPool]:
    pool = SessionPool()
    settled = anyio.Event()
    release = anyio.Event()
    limiter = anyio.Semaphore(parallel)
    done = 0

    def mark_settled() -> None:
        nonlocal done
        done += 1
        if done == count:
            settled.set()

    async def hold() -> None:
        counted = False
        await limiter.acquire()
        acquired = True
        try:
            async with make_client() as client:
                limiter.release()
                acquired = False
                pool.clients.append(client)
                counted = True
                mark_settled()
                await release.wait()
        except Exception as exc:  # a session that fails to open (or close) is a measured error
            pool.open_errors.append(describe(exc))
        finally:
            if acquired:
                limiter.release()
            if not counted:
                mark_settled()

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(count):
            tg.start_soon(hold)
        if count:
            await settled.wait()
        pool.open_seconds = time.perf_counter() - start
        try:
            yield pool
        finally:
            release.set()


def resolve_tool(names: Sequence[str], base: str) -> str:
    """The tool named ``base``, or the gateway's namespaced ``<server>__base``."""
    if base in names:
        return base
    matches = [name for name in names if name.endswith(f"__{base}")]
    if not matches:
        raise LookupError(f"no tool {base!r} among {sorted(names)}")
    return matches[0]


async def find_tool(client: Client, base: str, deadline_s: float = 30.0) -> str:
    """List tools until ``base`` appears: a proxy may connect its upstream after it answers."""
    names: list[str] = []
    with anyio.move_on_after(deadline_s):
        while True:
            names = [tool.name for tool in (await client.list_tools()).tools]
            with contextlib.suppress(LookupError):
                return resolve_tool(names, base)
            await anyio.sleep(0.2)
    return resolve_tool(names, base)


@dataclass
class CallOutcomes:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    abandoned: int = 0
    first_errors: list[str] = field(default_factory=list)

    def error(self, text: str) -> None:
        self.errors += 1
        if len(self.first_errors) < 3 and text not in self.first_errors:
            self.first_errors.append(text)


def _result_text(result: object) -> str:
    content = getattr(result, "content", None) or []
    return " ".join(str(getattr(part, "text", part)) for part in content)[:200] or "error result without text"


async def run_calls(
    clients: Sequence[Client], tool: str, calls: int, concurrency: int, max_seconds: float
) -> CallOutcomes:
    """Up to ``calls`` closed-loop calls by ``concurrency`` workers spread over ``clients``
    (worker i uses session i mod n); no new call starts after ``max_seconds``, and calls still
    running at twice that are abandoned (a path this slow at high concurrency would otherwise
    take concurrency / throughput seconds to drain)."""
    out = CallOutcomes()
    remaining = calls
    deadline = time.perf_counter() + max_seconds
    started = finished = 0

    async def worker(client: Client) -> None:
        nonlocal remaining, started, finished
        while remaining > 0 and time.perf_counter() < deadline:
            remaining -= 1
            start = time.perf_counter()
            started += 1
            try:
                result = await client.call_tool(tool, {"text": "ping"})
            except Exception as exc:  # an error is a measured outcome, not the end of the row
                finished += 1
                out.error(describe(exc)[:200])
                continue
            finished += 1
            out.latencies.append(time.perf_counter() - start)
            if result.is_error:
                out.error(_result_text(result))

    with anyio.move_on_after(2 * max_seconds):
        async with anyio.create_task_group() as tg:
            for index in range(concurrency):
                tg.start_soon(worker, clients[index % len(clients)])
    out.abandoned = started - finished
    return out


@dataclass(frozen=True)
class Budget:
    calls: int
    warmup: int
    row_seconds: float


async def measure_row(clients: Sequence[Client], tool: str, row: Row, budget: Budget) -> None:
    """Warm up, then measure ``row`` with CPU and RSS of the bench's child processes."""
    row.sessions = len(clients)
    calls = max(budget.calls, 8 * len(clients))
    await run_calls(clients, tool, max(budget.warmup, 2 * row.concurrency), row.concurrency, budget.row_seconds / 4)
    procs = ProcessSet.of_bench()
    client0, proxy0, upstream0 = time.process_time(), cpu_seconds(procs.proxy), cpu_seconds(procs.upstream)
    start = time.perf_counter()
    with RssSampler(procs.proxy) as rss:
        out = await run_calls(clients, tool, calls, row.concurrency, budget.row_seconds)
    wall = time.perf_counter() - start
    latencies, row.abandoned, row.first_errors = out.latencies, out.abandoned, out.first_errors
    done = max(1, len(latencies) + out.errors)
    cpu = {
        "client": time.process_time() - client0,
        "proxy": cpu_seconds(procs.proxy) - proxy0,
        "upstream": cpu_seconds(procs.upstream) - upstream0,
    }
    stats = summarize_latencies(latencies)
    row.calls, row.errors = len(latencies), out.errors
    row.p50_ms, row.p95_ms, row.p99_ms, row.mean_ms = stats.p50_ms, stats.p95_ms, stats.p99_ms, stats.mean_ms
    row.calls_per_s = round(len(latencies) / wall, 1)
    row.cpu_ms_per_call = {k: round(v / done * 1e3, 3) for k, v in cpu.items() if k != "proxy" or procs.proxy}
    row.proxy_rss_peak_mb = round(rss.peak / MB, 1) if procs.proxy else None
    row.protocol_version = str(clients[0].protocol_version)
    row.load_1m = round(os.getloadavg()[0], 2)
