"""Several stores on one SQLite file, written at once: every write lands.

The gateway opens one engine per store (registry, audit log, past uses, approvals) on the same
database file, each with its own pool. Under a burst of admin requests their ``BEGIN IMMEDIATE``
transactions queue on the file's lock; with SQLite's default 5 s busy timeout and a rollback
journal, the later ones failed with "database is locked" (a 500 to the admin, or a background
write lost).
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path

from sqlalchemy import text

from mcp_aggregator.registry import Registry, RegistrySettings
from mcp_aggregator.registry.records import ServerSpec, ToolPinRecord, ToolSpec, TransportType

ENGINES = 4
WRITES = 160
TOOLS = 50


async def test_a_burst_of_writes_from_four_engines_on_one_file_all_land(tmp_path: Path) -> None:
    settings = RegistrySettings(database_url=f"sqlite+aiosqlite:///{tmp_path}/registry.db")
    async with AsyncExitStack() as stack:
        registries = [await stack.enter_async_context(Registry(settings)) for _ in range(ENGINES)]
        first = registries[0]
        ids = [
            (await first.register_server(ServerSpec(f"s{i}", TransportType.STDIO, {"command": "x"}))).id
            for i in range(ENGINES)
        ]

        async def write(k: int) -> None:
            tools = [ToolSpec(f"t{k}-{j}", description="d" * 400) for j in range(TOOLS)]
            await registries[k % ENGINES].replace_tools(ids[k % ENGINES], tools)

        outcomes = await asyncio.gather(*(write(k) for k in range(WRITES)), return_exceptions=True)

        failures = [repr(o) for o in outcomes if isinstance(o, BaseException)]
        assert failures == []
        for i, server_id in enumerate(ids):
            names = {tool.original_name for tool in await first.list_tools(server_id)}
            # Whichever write came last, it landed whole: replace_tools is one transaction.
            writers = {name.split("-")[0] for name in names}
            assert len(writers) == 1 and len(names) == TOOLS
            assert int(writers.pop()[1:]) % ENGINES == i


async def test_bulk_writes_in_the_worker_thread_and_the_writers_own_writes_all_land(tmp_path: Path) -> None:
    # On a file the tools and pins are written from a worker thread on a connection of their
    # own, beside the registry's writer (a classification here, a session's end in the
    # gateway): the two meet at SQLite's lock, and neither write may be lost.
    settings = RegistrySettings(database_url=f"sqlite+aiosqlite:///{tmp_path}/registry.db")
    async with Registry(settings) as registry:
        spec = ServerSpec("s", TransportType.STDIO, {"command": "x"})
        server = await registry.register_server(spec, tools=[ToolSpec(f"t{j}") for j in range(TOOLS)])
        stored = await registry.list_tools(server.id)

        async def bulk(k: int) -> None:
            await registry.replace_tools(server.id, [ToolSpec(f"t{j}") for j in range(TOOLS)])
            pins = [ToolPinRecord(server.id, f"t{j}", f"f{k}", {"name": f"t{j}"}) for j in range(TOOLS)]
            await registry.save_tool_pins(server.id, pins)

        async def classify(k: int) -> None:
            tool = stored[k % TOOLS]
            await registry.set_tool_classification(tool.id, skill_ids=[f"k{k}"], primary_skill_id=None)

        writes = [bulk(k) for k in range(WRITES // 8)] + [classify(k) for k in range(WRITES // 8)]
        outcomes = await asyncio.gather(*writes, return_exceptions=True)

        assert [repr(o) for o in outcomes if isinstance(o, BaseException)] == []
        tools = await registry.list_tools(server.id)
        # The same names each time: the ids and the classifications stay.
        assert [tool.id for tool in tools] == [tool.id for tool in stored]
        assert all(tool.is_classified for tool in tools[: WRITES // 8])
        pins = await registry.list_tool_pins(server.id)
        assert len(pins) == TOOLS and len({pin.fingerprint for pin in pins}) == 1


async def test_the_registry_file_is_in_write_ahead_log_mode(tmp_path: Path) -> None:
    # WAL lets readers go on beside the one writer, and makes each commit an append.
    settings = RegistrySettings(database_url=f"sqlite+aiosqlite:///{tmp_path}/registry.db")
    async with Registry(settings) as registry, registry.transaction() as session:
        mode = (await session.execute(text("PRAGMA journal_mode"))).scalar()
    assert mode == "wal"
