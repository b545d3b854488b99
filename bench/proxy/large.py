"""Large results: one ``blob`` call of 1, 5, 20, 50 MB directly and through the gateway."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

import anyio
from mcp import Client
from mcp.types import TextContent

from .measure import MB, find_tool, open_sessions
from .paths import Pair, PathEnv, Upstream, start_direct, start_gateway
from .procs import ProcessSet, RssSampler, describe, rss_bytes

LARGE_PATHS = (
    ("direct", "http-http"),
    ("direct", "stdio-stdio"),
    ("gateway", "http-http"),
    ("gateway", "http-stdio"),
    ("gateway", "stdio-stdio"),
)
"""The gateway over HTTP->stdio reads the stdio upstream itself while the bench client reads
HTTP: it isolates the gateway's stdio framing from the SDK client's (quadratic) stdio reader."""


@dataclass
class LargeRow:
    peer: str
    pair: str
    size_mb: int
    status: str = "ok"
    """``ok``, ``timeout``, ``skipped`` (a smaller size timed out), or ``error: ...``."""
    seconds: float | None = None
    next_call_ms: float | None = None
    """A small echo call right after, on the same session: does a big result hold it up?"""
    proxy_rss_before_mb: float | None = None
    proxy_rss_peak_mb: float | None = None


def result_length(content: Sequence[object]) -> int:
    return sum(len(block.text) for block in content if isinstance(block, TextContent))


async def measure_sizes(client: Client, rows: Sequence[LargeRow], timeout_s: float) -> None:
    blob = await find_tool(client, "blob")
    echo = await find_tool(client, "echo")
    await client.call_tool(echo, {"text": "warm"})
    timed_out = False
    for row in rows:
        if timed_out:
            row.status = "skipped"
            continue
        print(f"  large {row.peer:8} {row.pair:11} {row.size_mb:>3} MB ...", end="", flush=True)
        procs = ProcessSet.of_bench()
        row.proxy_rss_before_mb = round(rss_bytes(procs.proxy) / MB, 1) if procs.proxy else None
        size = row.size_mb * MB
        with RssSampler(procs.proxy) as rss:
            start = time.perf_counter()
            try:
                with anyio.fail_after(timeout_s):
                    result = await client.call_tool(blob, {"size": size})
                row.seconds = round(time.perf_counter() - start, 3)
                got = result_length(result.content)
                if result.is_error or got != size:
                    row.status = f"error: {'isError' if result.is_error else f'{got} of {size} bytes'}"
            except TimeoutError:
                row.status, timed_out = "timeout", True
            except Exception as exc:  # the error is the measurement
                row.status = f"error: {describe(exc)[:200]}"
        row.proxy_rss_peak_mb = round(rss.peak / MB, 1) if procs.proxy else None
        if not timed_out:
            with contextlib.suppress(Exception), anyio.fail_after(timeout_s):
                start = time.perf_counter()
                await client.call_tool(echo, {"text": "after"})
                row.next_call_ms = round((time.perf_counter() - start) * 1e3, 2)
        print(f" {row.status} {row.seconds if row.seconds is not None else '-'} s", flush=True)


async def measure_path(make_client: object, rows: Sequence[LargeRow], timeout_s: float) -> None:
    async with open_sessions(make_client, 1) as pool:  # type: ignore[arg-type]
        if pool.open_errors:
            raise RuntimeError(pool.open_errors[0])
        await measure_sizes(pool.clients[0], rows, timeout_s)


def run_large(
    sizes_mb: Sequence[int], timeout_s: float, http_upstream: Upstream, env: PathEnv, pairs: Sequence[str]
) -> list[LargeRow]:
    """Every (path, size) row; a path whose smaller size timed out skips its larger ones."""
    results: list[LargeRow] = []
    for peer, pair_text in LARGE_PATHS:
        if pair_text not in pairs:
            continue
        pair = Pair.parse(pair_text)
        upstream = http_upstream if pair.upstream == "http" else Upstream("stdio")
        rows = [LargeRow(peer, pair_text, size) for size in sizes_mb]
        results.extend(rows)
        start = start_direct(upstream, env) if peer == "direct" else start_gateway(pair, upstream, env, large=True)
        try:
            with start as endpoint:
                anyio.run(measure_path, endpoint.make_client, rows, timeout_s)
        except Exception as exc:  # one broken path must not hide the others' figures
            print(f"\n  large {peer} {pair_text} FAILED: {describe(exc)}", flush=True)
            for row in rows:
                if row.seconds is None and row.status == "ok":
                    row.status = f"error: {describe(exc)[:200]}"
    return results
