"""How long starting a stdio server holds the event loop, in a process the gateway's size.

Run: ``.venv/bin/python bench/spawn_bench.py [--rss-mb 320] [--starts 10] [--json PATH]``.

Grows this process to ``--rss-mb`` (touched pages, as the gateway's heap is), then on uvloop
starts ``/bin/true`` ``--starts`` times each way, with three pipes in a session of its own as
a stdio server is: uvloop's ``subprocess_exec`` (a fork of the whole process, in the event
loop, which waits until the child has run ``exec``) and ``spawn_child`` (``Popen``, which
uses ``vfork``, in a worker thread). Prints, for each, the median of the time the event loop
was held (the longest gap between its ticks while the start was awaited) and the median of
this process's CPU time per start.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import uvloop

from mcp_aggregator.upstreams.child_process import spawn_child

HERE = Path(__file__).resolve().parent


class _Quiet(asyncio.SubprocessProtocol):
    def __init__(self) -> None:
        self.done = asyncio.Event()

    def connection_lost(self, exc: Exception | None) -> None:
        self.done.set()


async def _ticks(gaps: list[float], stop: asyncio.Event) -> None:
    last = time.perf_counter()
    while not stop.is_set():
        await asyncio.sleep(0)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now


async def _start(way: str) -> tuple[asyncio.SubprocessTransport, _Quiet]:
    if way == "subprocess_exec":
        loop = asyncio.get_running_loop()
        return await loop.subprocess_exec(
            _Quiet,
            "/bin/true",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    return await spawn_child(_Quiet, ["/bin/true"], env=dict(os.environ), cwd=None)


async def measure(way: str, starts: int) -> dict[str, float]:
    held, cpu = [], []
    for _ in range(starts):
        gaps: list[float] = []
        stop = asyncio.Event()
        ticker = asyncio.create_task(_ticks(gaps, stop))
        await asyncio.sleep(0)
        before = time.process_time()
        transport, protocol = await _start(way)
        cpu.append(time.process_time() - before)
        stop.set()
        await ticker
        held.append(max(gaps, default=0.0))
        await protocol.done.wait()
        transport.close()
    return {"held_ms": statistics.median(held) * 1000, "cpu_ms": statistics.median(cpu) * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rss-mb", type=int, default=320)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--json", type=Path, default=HERE / "results" / "spawn.json")
    args = parser.parse_args()
    ballast = [bytearray(b"x" * (1 << 20)) for _ in range(args.rss_mb)]
    results: dict[str, Any] = {"rss_mb": args.rss_mb, "load_average": os.getloadavg()}
    for way in ("subprocess_exec", "spawn_child"):
        results[way] = uvloop.run(measure(way, args.starts))
        print(f"{way:16} loop held {results[way]['held_ms']:7.1f} ms, CPU {results[way]['cpu_ms']:5.1f} ms (median)")
    del ballast
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
