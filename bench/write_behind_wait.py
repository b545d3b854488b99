"""How long a session's end waits at the registry while the write-behind stores a start's tools.

Run: ``PYTHONPATH=SRC .venv/bin/python bench/write_behind_wait.py [--servers 50] [--tools 200]
[--busy-ms 10] [--idle-ms 5]`` (SRC: the ``src`` to measure; run it for two, back to back).

On a fresh SQLite file it registers ``--servers`` servers, then queues on a
``RegistryMirror`` what a start queues: each server's tools (``replace_tools``) and their
pins (``save_tool_pins``), one after the other. Meanwhile a task keeps the event loop busy as
a large start does (``--busy-ms`` of CPU, then ``--idle-ms`` of sleep, over and over), and
every 0.1 s a session's end is recorded (``SessionLedger.record``, what ``DELETE /mcp`` waits
for) and timed. Prints the records' p50 / p95 / max, each bulk write's time, the time to
drain the queue, and the process's CPU time.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio

from mcp_aggregator.registry import Registry, RegistrySettings, ServerSpec, ToolPinRecord, ToolSpec, TransportType
from mcp_aggregator.registry.registry_mirror import RegistryMirror
from mcp_aggregator.sessions.session_ledger import SessionLedger


def now() -> datetime:
    return datetime.now(UTC)


def tools(count: int) -> list[ToolSpec]:
    schema = {"type": "object", "properties": {"query": {"type": "string", "description": "what to look for " * 4}}}
    return [ToolSpec(f"tool_{j}", description="Does one thing well. " * 12, input_schema=schema) for j in range(count)]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        settings = RegistrySettings(database_url=f"sqlite+aiosqlite:///{Path(folder) / 'registry.db'}")
        async with Registry(settings) as registry, anyio.create_task_group() as group:
            ledger = SessionLedger(registry, clock=now)
            ids = [
                (await registry.register_server(ServerSpec(f"s{i:02}", TransportType.STDIO, {"command": "x"}))).id
                for i in range(args.servers)
            ]
            mirror = RegistryMirror()
            await group.start(mirror.run)
            bulk: list[float] = []
            specs = tools(args.tools)

            def queue(server_id: str) -> None:
                async def store_tools() -> None:
                    started = time.perf_counter()
                    await registry.replace_tools(server_id, specs)
                    bulk.append(time.perf_counter() - started)

                async def store_pins() -> None:
                    pins = [
                        ToolPinRecord(server_id, spec.original_name, "f", {"name": spec.original_name})
                        for spec in specs
                    ]
                    started = time.perf_counter()
                    await registry.save_tool_pins(server_id, pins)
                    bulk.append(time.perf_counter() - started)

                mirror.submit("tools", store_tools, server_id)
                mirror.submit("pins", store_pins, server_id)

            done = anyio.Event()

            async def busy() -> None:
                while not done.is_set():
                    until = time.perf_counter() + args.busy_ms / 1000
                    while time.perf_counter() < until:
                        pass
                    await anyio.sleep(args.idle_ms / 1000)

            records: list[float] = []

            async def probe() -> None:
                count = 0
                while not done.is_set():
                    started = time.perf_counter()
                    await ledger.record(f"session-{count}", ended=True)
                    records.append(time.perf_counter() - started)
                    count += 1
                    await anyio.sleep(0.1)

            cpu, started = time.process_time(), time.perf_counter()
            group.start_soon(busy)
            group.start_soon(probe)
            for server_id in ids:
                queue(server_id)
            await mirror.flush()
            drained = time.perf_counter() - started
            done.set()
            mirror.close()
            cpu = time.process_time() - cpu
    ms = [value * 1000 for value in records]
    shown = f"{statistics.median(ms):.0f} / {percentile(ms, 0.95):.0f} / {max(ms):.0f}"
    print(f"session records: {len(ms)}, p50 / p95 / max ms: {shown}")
    writes = [value * 1000 for value in bulk]
    print(f"bulk writes: {len(writes)}, p50 / max ms: {statistics.median(writes):.0f} / {max(writes):.0f}")
    print(f"queue drained in {drained:.1f} s; process CPU {cpu:.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--servers", type=int, default=50)
    parser.add_argument("--tools", type=int, default=200)
    parser.add_argument("--busy-ms", type=float, default=10.0)
    parser.add_argument("--idle-ms", type=float, default=5.0)
    anyio.run(main, parser.parse_args(), backend_options={"use_uvloop": True})
