"""Throughput with 1, 2 and 3 gateway replicas behind HAProxy, and how fast a registration spreads.

Usage::

    .venv/bin/python bench/replicas_bench.py [--replicas 1 2 3] [--clients 16] [--secs 10] [--registrations 20]

Needs PostgreSQL (``MCP_AGGREGATOR_TEST_PG_URL``, default the local ``test`` database; the
bench works in a schema of its own and drops it) and ``haproxy``. For each replica count it
runs ``mcp-aggregator serve --workers N`` (each replica with its own stdio echo upstream,
``bench/echo_server.py``), HAProxy rendered from ``deploy/haproxy.cfg.template`` in front,
and ``--clients`` closed-loop 2026-07-28 clients (one ``mcp.Client`` each, in this process)
calling ``echo`` for ``--secs`` seconds after a warm-up. Each row shows calls/s, latency,
CPU per call in the replicas, HAProxy and this client process (from ``/proc``), and each
replica's resident memory: the per-replica overhead. Then, with the largest count running,
``--registrations`` servers are registered through one replica's admin API and the time
until every replica's ``/healthz`` lists each is taken (polled every 5 ms).
Results go to ``bench/results/replicas.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import httpx
import yaml
from mcp import Client

from mcp_aggregator.replicas.haproxy_config import render_haproxy_config

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
# Ports come from the tests' helper (tests/ports.py); this script runs from a checkout.
sys.path.insert(0, str(REPO))
from tests.ports import free_port_block  # noqa: E402

RESULTS = BENCH / "results"
PG_URL = os.environ.get("MCP_AGGREGATOR_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
PG_DSN = PG_URL.replace("postgresql+asyncpg://", "postgresql://")
TOKEN = "bench-token-of-32-characters-xx"  # serve.admin_token takes 16 or more
TICKS = os.sysconf("SC_CLK_TCK")
ECHO = BENCH / "echo_server.py"
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def cpu_secs(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@contextlib.contextmanager
def spawned(argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    with log.open("ab") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


async def wait_healthy(url: str, within: float = 60) -> None:
    async with httpx.AsyncClient(timeout=2) as http:
        with anyio.fail_after(within):
            while True:
                with contextlib.suppress(httpx.TransportError):
                    if (await http.get(url)).status_code == 200:
                        return
                await anyio.sleep(0.05)


def write_config(directory: Path, schema: str, port: int) -> Path:
    config = {
        "servers": [
            # The sandbox shows a stdio server its working directory (read-only): the script lives there.
            {
                "name": "echo",
                "transport": "stdio",
                "command": sys.executable,
                "args": [str(ECHO), "stdio"],
                "cwd": str(BENCH),
            }
        ],
        "registry": {"database_url": PG_URL, "pg_schema": schema},
        "serve": {
            "host": "127.0.0.1",
            "port": port,
            "admin_token": TOKEN,
            "exposure": "passthrough",
            "data_dir": str(directory / "data"),
        },
        "search": {"embedder": "none"},
    }
    path = directory / f"config-{port}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


async def echo_ready(base: str, pool: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until the replica at ``base`` lists the echo tool; fail with the pool's log if
    the pool exits or the replica is not ready within a minute."""
    last: Exception | None = None
    with anyio.move_on_after(60):
        while pool.poll() is None:
            try:
                async with Client(f"{base}/mcp", mode="auto", cache=None) as client:
                    if any(t.name == "echo__echo" for t in (await client.list_tools()).tools):
                        return
            except Exception as exc:  # not up yet: refused connections, a 503 while connecting
                last = exc
            await anyio.sleep(0.1)
    tail = "\n".join((await anyio.Path(log).read_text(errors="replace")).splitlines()[-20:])
    raise RuntimeError(f"{base} never listed echo__echo (last error: {last!r}); the pool's log ends:\n{tail}")


async def balancer_ready(stats_port: int, replicas: int) -> None:
    """Wait until HAProxy's stats page shows every replica UP."""
    statuses: list[str] = []
    async with httpx.AsyncClient(timeout=2) as http:
        with anyio.move_on_after(60):
            while True:
                with contextlib.suppress(httpx.TransportError):
                    header, *lines = (await http.get(f"http://127.0.0.1:{stats_port}/;csv")).text.splitlines()
                    status = header.lstrip("# ").split(",").index("status")
                    rows = [line.split(",") for line in lines if line.startswith("replicas,")]
                    statuses = [row[status] for row in rows if row[1] != "BACKEND"]
                    if len(statuses) == replicas and all(status == "UP" for status in statuses):
                        return
                await anyio.sleep(0.2)
    raise RuntimeError(f"HAProxy did not mark all {replicas} replicas UP within 60 s: {statuses}")


async def load(front: str, clients: int, secs: float, warmup: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    measuring = False
    stop_at = time.perf_counter() + warmup + secs

    async def worker(slot: int) -> None:
        nonlocal errors
        async with Client(front, mode="auto", cache=None) as client:
            i = 0
            while time.perf_counter() < stop_at:
                started = time.perf_counter()
                try:
                    await client.call_tool("echo__echo", {"text": f"{slot}-{i}"})
                except Exception:
                    errors += 1
                if measuring:
                    latencies.append(time.perf_counter() - started)
                i += 1

    async def clock() -> None:
        nonlocal measuring
        await anyio.sleep(warmup)
        measuring = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(clock)
        for slot in range(clients):
            tg.start_soon(worker, slot)
    latencies.sort()
    return {
        "calls": len(latencies),
        "errors": errors,
        "calls_per_sec": len(latencies) / secs,
        "p50_ms": 1000 * latencies[len(latencies) // 2] if latencies else None,
        "p95_ms": 1000 * latencies[int(len(latencies) * 0.95)] if latencies else None,
    }


async def measure(replicas: int, args: argparse.Namespace, schema: str, work: Path) -> dict[str, Any]:
    base = free_port_block(replicas + 2)
    lb_port, stats_port = base + replicas, base + replicas + 1
    config = write_config(work, schema, base)
    haproxy_cfg = work / f"haproxy-{replicas}.cfg"
    haproxy_cfg.write_text(
        render_haproxy_config(
            (REPO / "deploy" / "haproxy.cfg.template").read_text(),
            port=lb_port,
            stats_port=stats_port,
            replicas=[f"127.0.0.1:{base + i}" for i in range(replicas)],
        )
    )
    pool_argv = [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(config), "--workers", str(replicas)]
    if replicas == 1:
        pool_argv = pool_argv[:-2]
    pool_log = work / f"pool-{replicas}.log"
    with (
        spawned(pool_argv, pool_log) as pool,
        spawned([HAPROXY, "-db", "-f", str(haproxy_cfg)], work / "haproxy.log") as lb,
    ):
        for i in range(replicas):
            await echo_ready(f"http://127.0.0.1:{base + i}", pool, pool_log)
        # HAProxy marks a replica up only after two passing health checks: load sent before
        # that gets its 503s.
        await balancer_ready(stats_port, replicas)
        front = f"http://127.0.0.1:{lb_port}/mcp"
        replica_pids = children(pool.pid) if replicas > 1 else [pool.pid]
        upstream_pids = [c for r in replica_pids for c in children(r)]
        before = {
            "replicas": sum(cpu_secs(p) for p in replica_pids),
            "upstreams": sum(cpu_secs(p) for p in upstream_pids),
            "haproxy": cpu_secs(lb.pid),
            "client": time.process_time(),
        }
        result = await load(front, args.clients, args.secs, args.warmup)
        after = {
            "replicas": sum(cpu_secs(p) for p in replica_pids),
            "upstreams": sum(cpu_secs(p) for p in upstream_pids),
            "haproxy": cpu_secs(lb.pid),
            "client": time.process_time(),
        }
        # The warm-up's CPU is in the window too; scale by the share of calls measured.
        total_calls = result["calls"] * (args.secs + args.warmup) / args.secs
        cpu = {k: 1000 * (after[k] - before[k]) / max(total_calls, 1) for k in before}
        rss = [rss_mb(p) for p in replica_pids]
        propagation = None
        if replicas == max(args.replicas):
            propagation = await registrations(base, replicas, args.registrations)
    return {
        "replicas": replicas,
        **result,
        "cpu_ms_per_call": cpu,
        "replica_rss_mb": rss,
        "propagation": propagation,
    }


async def registrations(base: int, replicas: int, count: int) -> dict[str, Any]:
    """Seconds from a registration's 201 until every replica supervises the server."""
    bases = [f"http://127.0.0.1:{base + i}" for i in range(replicas)]
    spreads: list[float] = []
    async with httpx.AsyncClient(timeout=30, headers={"authorization": f"Bearer {TOKEN}"}) as http:
        for n in range(count):
            name = f"reg{n}"
            body = {
                "name": name,
                "transport_type": "STDIO",
                "connection_config": {"command": sys.executable, "args": [str(ECHO), "stdio"], "cwd": str(BENCH)},
                "auto_connect": False,
            }
            response = await http.post(f"{bases[n % replicas]}/api/v1/aggregator/servers", json=body)
            response.raise_for_status()
            registered = time.perf_counter()
            pending = set(bases)
            with anyio.fail_after(30):
                while pending:
                    for url in list(pending):
                        if name in (await http.get(f"{url}/healthz")).json()["servers"]:
                            pending.discard(url)
                    if pending:
                        await anyio.sleep(0.005)
            spreads.append(time.perf_counter() - registered)
    spreads.sort()
    return {
        "registrations": count,
        "p50_ms": 1000 * statistics.median(spreads),
        "p95_ms": 1000 * spreads[min(len(spreads) - 1, int(len(spreads) * 0.95))],
        "max_ms": 1000 * spreads[-1],
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| replicas | calls/s | p50 ms | p95 ms | errors | CPU ms/call: replicas | upstreams | HAProxy | client "
        "| RSS per replica MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cpu = r["cpu_ms_per_call"]
        rss = statistics.mean(r["replica_rss_mb"]) if r["replica_rss_mb"] else 0
        lines.append(
            f"| {r['replicas']} | {r['calls_per_sec']:.0f} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['errors']} | "
            f"{cpu['replicas']:.2f} | {cpu['upstreams']:.2f} | {cpu['haproxy']:.2f} | {cpu['client']:.2f} | {rss:.0f} |"
        )
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--secs", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--registrations", type=int, default=20)
    parser.add_argument("--json", type=Path, default=RESULTS / "replicas.json", help="where to write the results")
    args = parser.parse_args()
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="replicas-bench-") as tmp:
            for n in args.replicas:
                # A fresh schema per count: the registrations of the last run must not linger.
                rows.append(await measure(n, args, f"{schema}_{n}", Path(tmp)))
                print(f"{n} replica(s): {rows[-1]['calls_per_sec']:.0f} calls/s", file=sys.stderr)
    finally:
        conn = await asyncpg.connect(PG_DSN)
        try:
            for n in args.replicas:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}_{n}" CASCADE')
        finally:
            await conn.close()
    print(table(rows))
    spread = next(r["propagation"] for r in rows if r["propagation"] is not None)
    print(
        f"\nregistration reaching all {max(args.replicas)} replicas ({spread['registrations']} registrations): "
        f"p50 {spread['p50_ms']:.0f} ms, p95 {spread['p95_ms']:.0f} ms, max {spread['max_ms']:.0f} ms"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg": os.getloadavg()},
        "clients": args.clients,
        "secs": args.secs,
        "rows": rows,
        "command": " ".join(["bench/replicas_bench.py", *sys.argv[1:]]),
    }
    args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    anyio.run(main)
