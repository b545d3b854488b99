"""A registration loop for the crash-consistency test; killed with SIGKILL mid-way.

Usage: python crash_writer.py DATABASE_URL PG_SCHEMA

Server ``s<i>`` is registered with ``full_tools(i)`` in one transaction, then its tools
are replaced by ``replaced_tools(i)`` in another; each commit is reported on stdout.
"""

from __future__ import annotations

import itertools
import sys

import anyio

from mcp_aggregator.registry import Limits, Registry, RegistrySettings, ServerSpec, ToolSpec, TransportType

SCHEMA = {
    "type": "object",
    "properties": {f"p{k}": {"type": "string", "description": "x" * 80} for k in range(20)},
}


def full_tools(i: int) -> list[ToolSpec]:
    return [ToolSpec(f"t{j}", f"tool {j} of server {i}", SCHEMA) for j in range(5 + i % 7)]


def replaced_tools(i: int) -> list[ToolSpec]:
    return [*full_tools(i)[::2], ToolSpec("extra", "added on rediscovery", SCHEMA)]


async def main(url: str, pg_schema: str) -> None:
    limits = Limits(max_servers=1_000_000, max_total_tools=10_000_000)
    settings = RegistrySettings(database_url=url, pg_schema=pg_schema, limits=limits)
    async with Registry(settings) as registry:
        for i in itertools.count():
            server = await registry.register_server(
                ServerSpec(f"s{i}", TransportType.STDIO, {"command": "x"}), tools=full_tools(i)
            )
            print(f"registered {server.name}", flush=True)
            await registry.replace_tools(server.id, replaced_tools(i))
            print(f"replaced {server.name}", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
