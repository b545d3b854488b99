"""Killing the process in the middle of registrations never leaves half-written data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
from anyio.streams.text import TextReceiveStream

from mcp_aggregator.registry import Registry

from .conftest import Database
from .crash_writer import full_tools, replaced_tools

WRITER = Path(__file__).with_name("crash_writer.py")
REGISTRATIONS_BEFORE_KILL = 25


async def test_sigkill_during_registrations_leaves_every_server_with_exactly_its_tools(
    database: Database, tmp_path: Path
) -> None:
    stderr_path = tmp_path / "writer.stderr"
    reported: list[str] = []
    with stderr_path.open("wb") as stderr, anyio.fail_after(60):
        async with await anyio.open_process(
            [sys.executable, str(WRITER), database.url, database.pg_schema],
            stdout=subprocess.PIPE,
            stderr=stderr,
        ) as process:
            assert process.stdout is not None
            buffer = ""
            async for chunk in TextReceiveStream(process.stdout):
                buffer += chunk
                *lines, buffer = buffer.split("\n")
                reported += [line for line in lines if line.startswith("registered ")]
                if len(reported) >= REGISTRATIONS_BEFORE_KILL:
                    process.kill()
                    break
            await process.wait()
    assert len(reported) >= REGISTRATIONS_BEFORE_KILL, stderr_path.read_text()

    async with Registry(database.settings()) as registry:
        servers = await registry.list_servers()
        tools = await registry.list_tools()

    names = {server.name for server in servers}
    assert {line.removeprefix("registered ") for line in reported} <= names
    tools_by_server: dict[str, set[str]] = {server.id: set() for server in servers}
    for tool in tools:
        tools_by_server[tool.source_server_id].add(tool.original_name)
    for server in servers:
        i = int(server.name.removeprefix("s"))
        stored = tools_by_server[server.id]
        assert stored in (
            {t.original_name for t in full_tools(i)},
            {t.original_name for t in replaced_tools(i)},
        )
        assert server.tool_count == len(stored)
