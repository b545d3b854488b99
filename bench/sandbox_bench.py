"""What the stdio sandbox costs (issue 35): start-up and per-call latency of one stdio server
sandboxed against the same server unsandboxed, in one run, alternating so that both meet the
same machine load.

Usage::

    .venv/bin/python bench/sandbox_bench.py [--starts 10] [--calls 500]

"bare" is spawning ``/bin/true`` and reaping it (with the sandbox set up in full): the
sandbox's own cost. Start-up is spawn + MCP handshake + tool discovery (``UpstreamConnection.run`` until ready),
with ``bench/echo_server.py`` as the server. Sandboxed runs use the default sandbox
(``outbound`` network: bwrap + nft + slirp4netns) and ``network: none`` (bwrap only).
Goals: start-up + <= 100 ms; per call within noise.

Prints a table and writes ``bench/results/sandbox.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import anyio

from mcp_aggregator.sandbox import SandboxConfig
from mcp_aggregator.sandbox.sandbox_launch import SandboxLaunch, host_facts
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite, effective
from mcp_aggregator.settings import ServerConfig
from mcp_aggregator.upstreams import UpstreamConnection

RESULTS_PATH = Path(__file__).parent / "results" / "sandbox.json"
ECHO = Path(__file__).parent / "echo_server.py"


@dataclass
class Row:
    variant: str
    bare_median_ms: float
    start_median_ms: float
    start_p90_ms: float
    call_median_us: float
    call_p90_us: float


VARIANTS: dict[str, SandboxConfig | None] = {
    "unsandboxed": None,
    "sandbox, network none": SandboxConfig(network="none"),  # type: ignore[arg-type]
    "sandbox, network outbound": SandboxConfig(),
}


async def one_start(site: SandboxSite | None, sandbox: SandboxConfig | None, calls: int) -> tuple[float, list[float]]:
    config = ServerConfig(
        name="echo",
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=(str(ECHO), "stdio"),
        cwd=str(ECHO.parent),  # shown read-only inside: the script lives there
        sandbox=sandbox,
    )
    connection = UpstreamConnection(config, sandbox=site if sandbox is not None else None)
    async with anyio.create_task_group() as tg:
        began = time.perf_counter()
        await tg.start(connection.run)
        started = time.perf_counter() - began
        latencies = []
        for _ in range(calls):
            t0 = time.perf_counter()
            await connection.call_tool("echo", {"text": "hi"})
            latencies.append(time.perf_counter() - t0)
        await connection.close()
    return started, latencies


async def bare_start(site: SandboxSite, sandbox: SandboxConfig | None) -> float:
    """Spawn ``/bin/true`` (in its sandbox, set up in full) and reap it: the sandbox's own cost,
    without an interpreter's start-up in the way."""
    began = time.perf_counter()
    if sandbox is None:
        process = await anyio.open_process(["/bin/true"])
        await process.wait()
        await process.aclose()
        return time.perf_counter() - began
    launch = SandboxLaunch("bare", "/bin/true", (), {}, None, effective(site.defaults, sandbox), site, {})
    launch.prepare()
    async with launch.running() as spawn:
        process = await anyio.open_process(list(spawn.argv), env=dict(spawn.env), pass_fds=spawn.pass_fds)
        await launch.release()
        await process.wait()
        await process.aclose()
    return time.perf_counter() - began


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


async def main(starts: int, calls: int) -> list[Row]:
    facts = host_facts()
    if facts.bwrap is None:
        raise SystemExit("bwrap is not installed: nothing to compare (run scripts/bootstrap.sh)")
    with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as data:
        site = SandboxSite(SandboxConfig(), Path(data))
        starts_of: dict[str, list[float]] = {name: [] for name in VARIANTS}
        calls_of: dict[str, list[float]] = {name: [] for name in VARIANTS}
        bare_of: dict[str, list[float]] = {name: [] for name in VARIANTS}
        await one_start(site, SandboxConfig(), 1)  # warm the page cache and the dirs
        for _ in range(starts):
            for name, sandbox in VARIANTS.items():
                started, latencies = await one_start(site, sandbox, calls // starts)
                starts_of[name].append(started)
                bare_of[name].append(await bare_start(site, sandbox))
                calls_of[name] += latencies
    return [
        Row(
            name,
            round(statistics.median(bare_of[name]) * 1e3, 1),
            round(statistics.median(starts_of[name]) * 1e3, 1),
            round(p90(starts_of[name]) * 1e3, 1),
            round(statistics.median(calls_of[name]) * 1e6, 1),
            round(p90(calls_of[name]) * 1e6, 1),
        )
        for name in VARIANTS
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--calls", type=int, default=500)
    options = parser.parse_args()
    rows = anyio.run(main, options.starts, options.calls)
    header = ("bare med ms", "start med ms", "start p90 ms", "call med us", "call p90 us")
    print(f"{'variant':28} " + " ".join(f"{name:>13}" for name in header))
    for row in rows:
        print(
            f"{row.variant:28} {row.bare_median_ms:13.1f} {row.start_median_ms:13.1f} {row.start_p90_ms:13.1f} "
            f"{row.call_median_us:13.1f} {row.call_p90_us:13.1f}"
        )
    RESULTS_PATH.parent.mkdir(exist_ok=True)
    payload = {
        "machine": platform.platform(),
        "cgroups": host_facts().cgroups,
        "starts": options.starts,
        "calls": options.calls,
        "rows": [asdict(row) for row in rows],
    }
    RESULTS_PATH.write_text(json.dumps(payload, indent=2) + "\n")
    print(json.dumps(payload))
