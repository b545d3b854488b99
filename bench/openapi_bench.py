"""An OpenAPI upstream's added latency, measured side by side with an MCP upstream's.

Usage::

    .venv/bin/python bench/openapi_bench.py [--calls 1000] [--seconds 60] [--json bench/results/openapi.json]

The proxy bench's side-by-side method (``bench/proxy/side.py``): one session per path,
rounds of one call on each path in rotating order at concurrency 1, so a slower moment of
the machine lands on every path alike. Four paths, one gateway
(``mcp-aggregator serve --exposure passthrough`` over HTTP) in front of two upstreams:

- ``rest direct``: a plain HTTP client (httpx2, keep-alive) ``GET /echo?text=ping`` on a
  FastAPI echo (``bench/rest_echo.py``);
- ``rest via gateway``: the SDK client calling the tool the gateway made from that
  service's own OpenAPI document (``transport: openapi``);
- ``mcp direct``: the SDK client calling the echo MCP server (``bench/echo_server.py``,
  streamable HTTP);
- ``mcp via gateway``: the same through the gateway (``transport: http``).

Read two ways, each as a difference of p50s and as the median of each round's own difference
(paired):

- ``rest`` (``rest via gateway`` - ``rest direct``) and ``mcp`` (``mcp via gateway`` - ``mcp
  direct``): what the gateway adds over each upstream reached directly. The ``rest`` figure
  also holds the MCP protocol itself (an SDK client and an MCP server in place of one plain
  GET), which no gateway can remove;
- ``bridge hop`` (``rest via gateway`` - ``mcp direct``): with the protocol's own cost
  taken out (both echoes are trivial), what reaching a REST service through the gateway
  costs over reaching an MCP server directly. The goal: the bridge hop is no more than the
  MCP upstream path's added latency (``mcp``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxy.measure import summarize_latencies
from proxy.paths import ADMIN_TOKEN, ECHO, PYTHON, http_client
from proxy.procs import free_port, managed_process, wait_for_http, wait_for_port

BENCH = Path(__file__).resolve().parent
PATHS = ("rest direct", "rest via gateway", "mcp direct", "mcp via gateway")


def gateway_config(workdir: Path, rest: str, mcp: str) -> Path:
    config = {
        "servers": [
            {"name": "rest", "transport": "openapi", "spec": f"{rest}/openapi.json"},
            {"name": "echo", "transport": "http", "base_url": mcp},
        ],
        "serve": {"exposure": "passthrough", "admin_token": ADMIN_TOKEN, "data_dir": str(workdir / "data")},
        "search": {"embedder": "none"},
        "audit": {"enabled": False},
    }
    path = workdir / "gateway.yaml"
    path.write_text(json.dumps(config))
    return path


async def measure(rest: str, mcp: str, gateway: str, calls: int, seconds: float) -> dict[str, Any]:
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(base_url=rest))
        direct_mcp = await stack.enter_async_context(http_client(mcp)())
        via = await stack.enter_async_context(http_client(gateway)())

        names: list[str] = []
        with anyio.move_on_after(30):
            while not {"rest__echo", "echo__echo"} <= set(names):
                names = [tool.name for tool in (await via.list_tools()).tools]
                await anyio.sleep(0.2)  # the gateway may connect its upstreams after it answers

        async def rest_direct() -> bool:
            response = await http.get("/echo", params={"text": "ping"})
            return response.status_code == 200

        async def rest_gateway() -> bool:
            return not (await via.call_tool("rest__echo", {"text": "ping"})).is_error

        async def mcp_direct() -> bool:
            return not (await direct_mcp.call_tool("echo", {"text": "ping"})).is_error

        async def mcp_gateway() -> bool:
            return not (await via.call_tool("echo__echo", {"text": "ping"})).is_error

        paths: list[Callable[[], Awaitable[bool]]] = [rest_direct, rest_gateway, mcp_direct, mcp_gateway]
        for path in paths * 50:  # warm-up: connections, caches, the gateway's first listing
            await path()
        taken: list[list[float]] = [[] for _ in paths]
        errors = [0 for _ in paths]
        paired: dict[str, list[float]] = {"rest": [], "mcp": [], "bridge hop": []}
        deadline = time.perf_counter() + seconds
        for round_index in range(calls):
            if time.perf_counter() > deadline:
                break
            this: list[float | None] = [None] * len(paths)
            for step in range(len(paths)):
                index = (round_index + step) % len(paths)
                start = time.perf_counter()
                ok = await paths[index]()
                this[index] = time.perf_counter() - start if ok else None
            for index, value in enumerate(this):
                if value is None:
                    errors[index] += 1
                else:
                    taken[index].append(value)
            for name, (base, via_index) in {"rest": (0, 1), "mcp": (2, 3), "bridge hop": (2, 1)}.items():
                base_s, via_s = this[base], this[via_index]
                if base_s is not None and via_s is not None:
                    paired[name].append(via_s - base_s)
    rows = {}
    for name, values, failed in zip(PATHS, taken, errors, strict=True):
        summary = summarize_latencies(values)
        rows[name] = {"calls": len(values), "errors": failed, "p50_ms": summary.p50_ms, "p95_ms": summary.p95_ms}
    pairs = {"rest": ("rest via gateway", "rest direct"), "mcp": ("mcp via gateway", "mcp direct")}
    pairs["bridge hop"] = ("rest via gateway", "mcp direct")
    added = {
        name: {
            "added_p50_ms": round(rows[via]["p50_ms"] - rows[base]["p50_ms"], 3),
            "paired_added_ms": round(statistics.median(paired[name]) * 1e3, 3) if paired[name] else None,
        }
        for name, (via, base) in pairs.items()
    }
    return {"rows": rows, "added": added}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000, help="rounds (one call per path each)")
    parser.add_argument("--seconds", type=float, default=60.0, help="stop the rounds after this long")
    parser.add_argument("--json", type=Path, default=BENCH / "results" / "openapi.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="openapi-bench-") as scratch, contextlib.ExitStack() as stack:
        workdir = Path(scratch)
        rest_port, mcp_port, gateway_port = free_port(), free_port(), free_port()
        rest_log, mcp_log, gateway_log = (workdir / f"{n}.log" for n in ("rest", "mcp", "gateway"))
        rest_proc = stack.enter_context(
            managed_process([PYTHON, str(BENCH / "rest_echo.py"), "--port", str(rest_port)], rest_log)
        )
        mcp_proc = stack.enter_context(managed_process([PYTHON, str(ECHO), "http", "--port", str(mcp_port)], mcp_log))
        wait_for_port(rest_port, rest_proc, rest_log)
        wait_for_port(mcp_port, mcp_proc, mcp_log)
        rest, mcp = f"http://127.0.0.1:{rest_port}", f"http://127.0.0.1:{mcp_port}/mcp"
        config = gateway_config(workdir, rest, mcp)
        command = [PYTHON, "-m", "mcp_aggregator", "serve", "--config", str(config), "--transport", "http"]
        command += ["--host", "127.0.0.1", "--port", str(gateway_port), "--exposure", "passthrough"]
        gateway_proc = stack.enter_context(managed_process(command, gateway_log))
        wait_for_http(f"http://127.0.0.1:{gateway_port}/healthz", gateway_proc, gateway_log)
        result = anyio.run(measure, rest, mcp, f"http://127.0.0.1:{gateway_port}/mcp", args.calls, args.seconds)
    print(f"{'path':18} {'calls':>6} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8}")
    for name, row in result["rows"].items():
        print(f"{name:18} {row['calls']:>6} {row['errors']:>6} {row['p50_ms']:>8.3f} {row['p95_ms']:>8.3f}")
    for name, added in result["added"].items():
        print(f"added, {name:10}: p50 {added['added_p50_ms']:+.3f} ms, paired {added['paired_added_ms']:+.3f} ms")
    met = result["added"]["bridge hop"]["added_p50_ms"] <= result["added"]["mcp"]["added_p50_ms"]
    result["goal_met"] = met
    print(f"goal (bridge hop p50 <= the MCP upstream path's added p50): {'met' if met else 'missed'}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
