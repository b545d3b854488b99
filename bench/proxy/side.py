"""Latency side by side: one session per path, their calls interleaved one at a time.

The main table measures each path in its own stretch of time, so at concurrency 1 a
minute in which the machine is slower (another tenant, a frequency step) lands on one
path and reads as that path's cost. Here every round makes one call on each path, in a
rotating order, so drift hits them all alike; "added" is then read two ways: the
difference of the p50s, and the median of each round's own difference (paired).
"""

from __future__ import annotations

import contextlib
import functools
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import anyio
from mcp import Client

from .idle import ERAS
from .measure import find_tool, open_sessions, resolve_tool, summarize_latencies
from .options import Options
from .paths import Endpoint, Pair, PathEnv, Unavailable, Upstream, start_path, unsupported
from .procs import describe


@dataclass
class SideRow:
    pair: str
    peer: str
    calls: int = 0
    errors: int = 0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0
    added_p50_ms: float | None = None
    """This path's p50 minus direct's."""
    paired_added_ms: float | None = None
    """The median over rounds of (this path's call - direct's call in the same round)."""
    method: str = "tools/call"
    note: str | None = None
    failure: str | None = None


RESOURCE_URI = "echo://static"


async def _call(client: Client, method: str, target: str) -> float | None:
    """One request's seconds, or None for an error (an error is counted, not timed)."""
    start = time.perf_counter()
    try:
        if method == "tools/call":
            if (await client.call_tool(target, {"text": "ping"})).is_error:
                return None
        elif method == "prompts/get":
            await client.get_prompt(target, {"text": "ping"})
        else:
            await client.read_resource(target)
    except Exception:
        return None
    return time.perf_counter() - start


async def _target(client: Client, method: str) -> str:
    """The echo tool's or prompt's name on this path, or the resource's URI (unchanged through a
    gateway in front of one server)."""
    if method == "resources/read":
        await find_tool(client, "echo")  # the upstream is connected once its tools show
        return RESOURCE_URI
    if method == "prompts/get":
        await find_tool(client, "echo")
        return resolve_tool([prompt.name for prompt in (await client.list_prompts()).prompts], "echo_prompt")
    return await find_tool(client, "echo")


async def interleave(endpoints: Sequence[tuple[str, Endpoint]], pair: str, options: Options) -> list[SideRow]:
    """Warm every path up, then make rounds of one call per path until the call count or the
    time cap (``--side-seconds``) is reached."""
    method = options.side_method
    rows = [SideRow(pair, peer, method=method) for peer, _ in endpoints]
    latencies: list[list[float]] = [[] for _ in endpoints]
    differences: list[list[float]] = [[] for _ in endpoints]
    mode = ERAS[options.era]
    async with contextlib.AsyncExitStack() as stack:
        clients: list[Client] = []
        tools: list[str] = []
        for peer, endpoint in endpoints:
            pool = await stack.enter_async_context(open_sessions(functools.partial(endpoint.make_client, mode), 1))
            if pool.open_errors:
                raise RuntimeError(f"{peer}: the session failed to open: {pool.open_errors[0]}")
            clients.append(pool.clients[0])
            tools.append(await _target(pool.clients[0], method))
        for _ in range(options.warmup):
            for client, tool in zip(clients, tools, strict=True):
                await _call(client, method, tool)
        direct = next((i for i, (peer, _) in enumerate(endpoints) if peer == "direct"), None)
        deadline = time.perf_counter() + options.side_seconds
        count = len(endpoints)
        for round_index in range(options.side_calls):
            if time.perf_counter() > deadline:
                break
            taken: list[float | None] = [None] * count
            for step in range(count):
                index = (round_index + step) % count
                taken[index] = await _call(clients[index], method, tools[index])
            base = taken[direct] if direct is not None else None
            for index, seconds in enumerate(taken):
                if seconds is None:
                    rows[index].errors += 1
                    continue
                latencies[index].append(seconds)
                if base is not None and index != direct:
                    differences[index].append(seconds - base)
    base_p50 = None
    for index, row in enumerate(rows):
        stats = summarize_latencies(latencies[index])
        row.calls = len(latencies[index])
        row.p50_ms, row.p95_ms, row.p99_ms = stats.p50_ms, stats.p95_ms, stats.p99_ms
        if index == direct and row.calls:
            base_p50 = row.p50_ms
        if differences[index]:
            row.paired_added_ms = round(statistics.median(differences[index]) * 1e3, 3)
    for index, row in enumerate(rows):
        if base_p50 is not None and index != direct and row.calls:
            row.added_p50_ms = round(row.p50_ms - base_p50, 3)
    return rows


def run_side(options: Options, env: PathEnv, http_upstream: Upstream) -> list[SideRow]:
    results: list[SideRow] = []
    for pair_text in options.pairs:
        pair = Pair.parse(pair_text)
        upstream = http_upstream if pair.upstream == "http" else Upstream("stdio")
        absent = [
            SideRow(pair_text, p, note=r, method=options.side_method)
            for p in options.side_peers
            if (r := unsupported(p, pair))
        ]
        peers = [p for p in options.side_peers if unsupported(p, pair) is None]
        print(f"  {pair_text:11} {', '.join(peers)} interleaved ...", end="", flush=True)
        try:
            with contextlib.ExitStack() as stack:
                endpoints = [(peer, stack.enter_context(start_path(peer, pair, upstream, env))) for peer in peers]
                rows = anyio.run(interleave, endpoints, pair_text, options)
        except Unavailable as exc:
            rows = [SideRow(pair_text, peer, note=str(exc), method=options.side_method) for peer in peers]
        except Exception as exc:  # one broken pair must not hide the others' figures
            rows = [SideRow(pair_text, peer, failure=describe(exc)[:300], method=options.side_method) for peer in peers]
        measured = ", ".join(f"{r.peer} {r.p50_ms:.2f} ms" for r in rows if r.calls)
        print(f" {measured or 'failed'}", flush=True)
        results.extend(rows + absent)
    return results
