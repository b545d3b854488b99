"""The web page's overview at scale: ``--servers`` stdio upstreams of ``--tools`` tools each (50 x 200).

Run: ``.venv/bin/python bench/page_bench.py [--servers 50] [--tools 200] [--rounds 30]
[--json bench/results/page.json]``.

Starts ``python -m mcp_aggregator serve`` over ``startup_bench.py``'s catalogue
(``many_tools_server.py`` upstreams; lexical search only, since embedding is not what is
measured here), waits until every server is CONNECTED and every tool registered, then times,
``--rounds`` times each, what a page load asks the gateway for:

- ``overview``: what the overview reads, in parallel as the page sends it: ``/servers``,
  ``/state`` and ``/series?minutes=60`` (the goal: at most 300 ms);
- ``page``: the page itself (``GET /``);
- ``baseline: every server's detail and tools``: what the page read on every refresh
  before it had views (``/servers``, ``/state``, then each server's detail and tools), in
  the same run, for comparison.

Prints a table and writes the JSON to ``--json``. Figures from a shared machine are indicative.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.startup_bench import HERE, TOKEN, _read_log, _start, _stop, free_port, write_config

API = "/api/v1/aggregator"
GOAL_MS = 300.0


async def _ready(client: httpx.AsyncClient, servers: int, tools: int, limit: float) -> None:
    with anyio.fail_after(limit):
        while True:
            try:
                state = (await client.get(f"{API}/state")).json()
            except httpx.HTTPError:
                state = {}
            if state.get("connected_servers") == servers and state.get("total_tools") == servers * tools:
                return
            await anyio.sleep(0.5)


async def _overview(client: httpx.AsyncClient) -> None:
    async with anyio.create_task_group() as tg:
        for path in ("/servers", "/state", "/series?minutes=60"):
            tg.start_soon(_get, client, API + path)


FAILED: list[str] = []
"""Answers of the baseline that were not 200 (it is timed all the same)."""


async def _old_refresh(client: httpx.AsyncClient) -> None:
    servers = (await client.get(f"{API}/servers")).json()
    await client.get(f"{API}/state")
    async with anyio.create_task_group() as tg:
        for server in servers:
            tg.start_soon(_get_noting, client, f"{API}/servers/{server['id']}")
            tg.start_soon(_get_noting, client, f"{API}/servers/{server['id']}/tools")


async def _get_noting(client: httpx.AsyncClient, path: str) -> None:
    answer = await client.get(path)
    if answer.status_code != 200:
        FAILED.append(f"{answer.status_code} {path}: {answer.text[:200]}")


async def _get(client: httpx.AsyncClient, path: str) -> None:
    answer = await client.get(path)
    answer.raise_for_status()


async def _timed(rounds: int, action: Any) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        await action()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def _row(name: str, values: list[float]) -> dict[str, Any]:
    return {
        "what": name,
        "rounds": len(values),
        "p50_ms": round(float(np.percentile(values, 50)), 1),
        "p95_ms": round(float(np.percentile(values, 95)), 1),
        "max_ms": round(max(values), 1),
    }


async def measure(servers: int, tools: int, rounds: int, limit: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="page-bench-") as tmp:
        folder = Path(tmp)
        port = free_port()
        config = write_config(folder, servers, tools, port)
        config.write_text(config.read_text() + "search:\n  embedder: none\n")
        env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src"), "HF_HUB_OFFLINE": "1"}
        proc = _start(config, env)

        class _Run:
            banner_at: float | None = None

        log: list[str] = []
        reader = threading.Thread(target=_read_log, args=(_Run(), proc, time.monotonic(), log), daemon=True)
        reader.start()
        try:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            limits = httpx.Limits(max_connections=6)  # a browser's connections to one host
            async with httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60, limits=limits
            ) as client:
                started = time.monotonic()
                await _ready(client, servers, tools, limit)
                ready_secs = time.monotonic() - started
                for _ in range(3):
                    await _overview(client)  # warm
                rows = [
                    _row("overview (/servers, /state, /series)", await _timed(rounds, lambda: _overview(client))),
                    _row("page (GET /)", await _timed(rounds, lambda: _get(client, "/"))),
                ]
                try:
                    old = await _timed(max(3, rounds // 5), lambda: _old_refresh(client))
                    rows.append(_row("baseline: every server's detail and tools", old))
                except httpx.HTTPError as exc:
                    # The old page's burst of 2 x servers requests can topple a loaded gateway.
                    FAILED.append(f"the gateway stopped answering: {exc!r}")
        except BaseException:
            print("".join(log[-40:]))
            raise
        finally:
            _stop(proc)
            reader.join(5)
    return {
        "servers": servers,
        "tools": tools,
        "ready_secs": round(ready_secs, 1),
        "goal_ms": GOAL_MS,
        "rows": rows,
        "baseline_failures": FAILED,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=50)
    parser.add_argument("--tools", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--limit", type=float, default=600.0, help="seconds to wait for every server")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "page.json")
    args = parser.parse_args()
    result = anyio.run(measure, args.servers, args.tools, args.rounds, args.limit)
    print(f"{result['servers']} servers x {result['tools']} tools (ready after {result['ready_secs']} s)")
    print(f"{'what':<45} {'rounds':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for row in result["rows"]:
        print(f"{row['what']:<45} {row['rounds']:>6} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['max_ms']:>8}")
    if FAILED:
        print(f"baseline: {len(FAILED)} answers were not 200, e.g. {FAILED[0]}")
    overview = result["rows"][0]
    met = "met" if overview["p95_ms"] <= GOAL_MS else "NOT met"
    print(f"overview p95 {overview['p95_ms']} ms; goal <= {GOAL_MS:.0f} ms: {met}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
