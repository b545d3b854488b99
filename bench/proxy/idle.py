"""Many sessions held open against the gateway, then one call each: errors and memory."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import anyio
from mcp import Client

from .measure import MB, find_tool, open_sessions, summarize_latencies
from .paths import Pair, PathEnv, Upstream, start_gateway
from .procs import ProcessSet, describe, rss_bytes

ERAS = {"2025-11-25": "legacy", "2026-07-28": "auto"}
"""Protocol era -> the SDK client's connect mode (``auto`` discovers 2026-07-28)."""


@dataclass
class IdleRow:
    era: str
    sessions: int
    opened: int = 0
    open_errors: int = 0
    call_errors: int = 0
    open_seconds: float = 0.0
    call_p50_ms: float = 0.0
    call_p99_ms: float = 0.0
    negotiated: list[str] = field(default_factory=list)
    rss_before_mb: float = 0.0
    rss_idle_mb: float = 0.0
    rss_after_calls_mb: float = 0.0
    rss_per_idle_session_kb: float = 0.0
    first_errors: list[str] = field(default_factory=list)
    failure: str | None = None


async def hold_and_call(make_client: Callable[..., Client], mode: str, row: IdleRow) -> None:
    def proxy_rss_mb() -> float:
        return round(rss_bytes(ProcessSet.of_bench().proxy) / MB, 1)

    # One session first, so the upstream connection and the catalogue are in the baseline.
    async with open_sessions(lambda: make_client(mode), 1) as warm:
        if warm.open_errors:
            raise RuntimeError(warm.open_errors[0])
        tool = await find_tool(warm.clients[0], "echo")
        await warm.clients[0].call_tool(tool, {"text": "warm"})
    await anyio.sleep(0.5)
    row.rss_before_mb = proxy_rss_mb()
    async with open_sessions(lambda: make_client(mode), row.sessions, parallel=64) as pool:
        row.opened, row.open_seconds = len(pool.clients), round(pool.open_seconds, 2)
        row.open_errors = len(pool.open_errors)
        row.first_errors = sorted(set(pool.open_errors))[:3]
        row.negotiated = sorted({str(client.protocol_version) for client in pool.clients})
        row.rss_idle_mb = proxy_rss_mb()
        latencies: list[float] = []

        async def call(client: Client) -> None:
            start = time.perf_counter()
            try:
                result = await client.call_tool(tool, {"text": "one"})
            except Exception as exc:  # counted: the goal is zero
                row.call_errors += 1
                row.first_errors = sorted({*row.first_errors, describe(exc)[:200]})[:3]
                return
            latencies.append(time.perf_counter() - start)
            row.call_errors += int(result.is_error)

        async with anyio.create_task_group() as tg:
            for client in pool.clients:
                tg.start_soon(call, client)
        stats = summarize_latencies(latencies)
        row.call_p50_ms, row.call_p99_ms = stats.p50_ms, stats.p99_ms
        row.rss_after_calls_mb = proxy_rss_mb()
    if row.opened:
        row.rss_per_idle_session_kb = round((row.rss_idle_mb - row.rss_before_mb) * 1024 / row.opened, 1)


def run_idle(count: int, http_upstream: Upstream, env: PathEnv, eras: Sequence[str] = tuple(ERAS)) -> list[IdleRow]:
    """For each era, a fresh HTTP gateway with ``count`` sessions of that era held open."""
    rows: list[IdleRow] = []
    for era in eras:
        row = IdleRow(era, count)
        rows.append(row)
        print(f"  {count} sessions, {era} ...", end="", flush=True)
        try:
            with start_gateway(Pair("http", "http"), http_upstream, env) as endpoint:
                anyio.run(hold_and_call, endpoint.make_client, ERAS[era], row)
        except Exception as exc:  # one era failing must not hide the other's figures
            row.failure = describe(exc)[:300]
        print(
            f" opened {row.opened} in {row.open_seconds} s, errors {row.open_errors}+{row.call_errors}, "
            f"RSS {row.rss_before_mb} -> {row.rss_idle_mb} MB" + (f" FAILED {row.failure}" if row.failure else ""),
            flush=True,
        )
    return rows
