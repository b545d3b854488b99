"""Benchmark of approvals (issue 47): a call under no rule pays nothing measurable.

Usage::

    .venv/bin/python bench/approvals_bench.py [--quick] [--calls N]

Two gateways over the same stdio echo upstream (``bench/echo_server.py``), served over
streamable HTTP with the fast path on: one without approval rules (the baseline), one with a
rule holding another tool (``bench.blob``). A 2026-07-28 SDK client calls ``echo`` (under no
rule) on both, the calls interleaved A B B A so the machine's load falls on both alike; it
reports each gateway's p50 and p90 and the difference, how many calls each fast path answered,
and the stage chain alone (``pipeline.through`` around an answer already in hand).

Prints a table and writes ``bench/results/approvals.json`` (``--json PATH``: elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.relay import Caller, Invocation
from mcp_aggregator.serve.fast_path import FastPath
from mcp_aggregator.serve.http_app import build_http_app, uvicorn_config
from mcp_aggregator.serve.profile_servers import ProfileServers
from mcp_aggregator.serve.runner import bind_socket
from mcp_aggregator.settings import Settings

HERE = Path(__file__).parent
RESULTS_PATH = HERE / "results" / "approvals.json"
RULE = {"name": "blobs", "tools": ["bench.blob"], "ask": "admin", "timeout_secs": 60}


def bench_settings(rules: list[dict[str, Any]], data_dir: Path) -> Settings:
    return Settings.model_validate(
        {
            "servers": [
                {
                    "name": "bench",
                    "transport": "stdio",
                    "command": sys.executable,
                    "args": [str(HERE / "echo_server.py"), "stdio"],
                    "cwd": str(HERE),
                }
            ],
            "serve": {"exposure": "passthrough", "data_dir": str(data_dir)},
            "registry": {"database_url": f"sqlite+aiosqlite:///{data_dir / 'registry.db'}"},
            "search": {"embedder": "none"},
            "approvals": rules,
        }
    )


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_us": round(statistics.median(ordered) * 1e6, 1),
        "p90_us": round(ordered[int(len(ordered) * 0.9)] * 1e6, 1),
        "n": len(ordered),
    }


@asynccontextmanager
async def served(gateway: Gateway) -> AsyncIterator[tuple[str, FastPath]]:
    """``gateway`` over streamable HTTP on a loopback port: its ``/mcp`` URL and fast path."""
    servers = ProfileServers(gateway)
    app = build_http_app(servers.default, profiles=servers.named)
    [fast] = [r.endpoint for r in app.routes if getattr(r, "path", None) == "/mcp"]
    while not isinstance(fast, FastPath):
        fast = fast.app
    server = uvicorn.Server(uvicorn_config(app, log_level="warning"))
    sock = bind_socket("127.0.0.1", 0)
    async with anyio.create_task_group() as background:
        await background.start(servers.run)
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(server.serve, sockets=[sock]))
            try:
                yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", fast
            finally:
                server.should_exit = True
        sock.close()
        background.cancel_scope.cancel()


async def stage_chain(gateways: dict[str, Gateway], n: int) -> dict[str, Any]:
    """The stage chain alone, around an answer already in hand (no upstream hop's noise)."""
    invocation = Invocation("tools/call", "bench", "echo", Caller(identity=ClientIdentity()), None, {"text": "x"})

    async def send() -> bytes:
        return b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'

    samples: dict[str, list[float]] = {name: [] for name in gateways}
    names = list(gateways)
    for i in range(n * 2):
        name = names[(i % 2) ^ ((i // 2) % 2)]
        start = time.perf_counter()
        await gateways[name].pipeline.through(invocation, send)
        samples[name].append(time.perf_counter() - start)
    return {name: percentiles(values[50:]) for name, values in samples.items()}


async def run(calls: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        async with AsyncExitStack() as stack:
            gateways = {
                "no_rules": await stack.enter_async_context(Gateway(bench_settings([], Path(one)))),
                "rule_on_another_tool": await stack.enter_async_context(Gateway(bench_settings([RULE], Path(two)))),
            }
            for gateway in gateways.values():
                await gateway.wait_settled(30)
            out["stage_chain"] = await stage_chain(gateways, calls * 4)
            clients: dict[str, Client] = {}
            fast_paths: dict[str, FastPath] = {}
            for name, gateway in gateways.items():
                url, fast_paths[name] = await stack.enter_async_context(served(gateway))
                http = await stack.enter_async_context(httpx2.AsyncClient(timeout=30))
                transport = streamable_http_client(url, http_client=http)
                clients[name] = await stack.enter_async_context(Client(transport, cache=None))
            samples: dict[str, list[float]] = {name: [] for name in clients}
            names = list(clients)
            before = {name: fast.forwarded for name, fast in fast_paths.items()}
            for i in range(calls * 2):
                name = names[(i % 2) ^ ((i // 2) % 2)]  # A B B A: neither always goes first
                start = time.perf_counter()
                await clients[name].call_tool("bench__echo", {"text": "hello"})
                samples[name].append(time.perf_counter() - start)
            end_to_end: dict[str, Any] = {name: percentiles(values[20:]) for name, values in samples.items()}
            for name, fast in fast_paths.items():
                end_to_end[name]["fast_path_calls"] = fast.forwarded - before[name]
            out["end_to_end"] = end_to_end
    for part in ("stage_chain", "end_to_end"):
        rows = out[part]
        rows["added_p50_us"] = round(rows["rule_on_another_tool"]["p50_us"] - rows["no_rules"]["p50_us"], 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    parser.add_argument("--calls", type=int, default=2000, help="calls per gateway")
    parser.add_argument("--json", type=Path, default=RESULTS_PATH, help="where to write the results")
    args = parser.parse_args()
    calls = 200 if args.quick else args.calls
    report: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()[0]},
        "calls_per_gateway": calls,
        **anyio.run(run, calls),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print_table(report)
    print(json.dumps(report))


def print_table(report: dict[str, Any]) -> None:
    print(f"{'measure':52} {'no rules':>12} {'rule elsewhere':>15} {'added':>9}")
    for part, label in (("stage_chain", "stage chain p50 (us)"), ("end_to_end", "echo over HTTP p50 (us)")):
        rows = report[part]
        base, ruled = rows["no_rules"], rows["rule_on_another_tool"]
        print(f"{label:52} {base['p50_us']:>12.1f} {ruled['p50_us']:>15.1f} {rows['added_p50_us']:>9.1f}")
    rows = report["end_to_end"]
    base, ruled = rows["no_rules"], rows["rule_on_another_tool"]
    print(f"{'echo over HTTP p90 (us)':52} {base['p90_us']:>12.1f} {ruled['p90_us']:>15.1f}")
    print(
        f"{'calls the fast path answered':52} {rows['no_rules']['fast_path_calls']:>12} "
        f"{rows['rule_on_another_tool']['fast_path_calls']:>15}"
    )


if __name__ == "__main__":
    main()
