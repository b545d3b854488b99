"""A call made before the upstream's first connection finished waits for it (bounded, as
``tools/list`` does) instead of failing with "tool not found"."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from mcp_aggregator.health import ServerStatus
from mcp_aggregator.sandbox.config import SandboxConfig
from mcp_aggregator.settings import ServerConfig
from tests.conftest import running_gateway, settings_for, stdio_fixture


def gated_fixture(gate: Path) -> ServerConfig:
    """The fixture upstream, started only once something is written to the FIFO ``gate``.
    The wait runs in the fixture's own interpreter, so its sandbox mounts what that needs,
    and the FIFO is granted read-only, as the sandbox shows nothing of the test's tmp dir."""
    plain = stdio_fixture("alpha")
    argv = [plain.command or sys.executable, *plain.args]
    script = f"import os; open({str(gate)!r}).readline(); os.execv({argv[0]!r}, {argv!r})"
    update = {"args": ("-c", script), "sandbox": SandboxConfig(read=(str(gate),))}
    return plain.model_copy(update=update)


def open_gate(gate: Path) -> None:
    # Blocks until the upstream's shell opens the FIFO for reading.
    fd = os.open(gate, os.O_WRONLY)
    try:
        os.write(fd, b"go\n")
    finally:
        os.close(fd)


async def test_a_call_before_the_first_connection_waits_for_it(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    settings = settings_for(gated_fixture(gate), list_wait_secs=60)
    results: list[types.CallToolResult] = []
    async with running_gateway(settings, settle=0) as (gateway, client):
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                results.append(await client.call_tool("alpha__echo", {"text": "after the wait"}))

            tg.start_soon(call)
            # Every task blocked: the call is in the gateway, the upstream held at the gate.
            await anyio.wait_all_tasks_blocked()
            assert results == []
            assert gateway.supervisor("alpha").status is not ServerStatus.CONNECTED
            await anyio.to_thread.run_sync(open_gate, gate)
        block = results[0].content[0]
        assert isinstance(block, types.TextContent) and block.text == "after the wait"


async def test_an_unknown_tool_still_fails_once_every_upstream_settled(tmp_path: Path) -> None:
    async with running_gateway(settings_for(stdio_fixture("alpha"))) as (_gateway, client):
        with pytest.raises(MCPError, match="nope"):
            await client.call_tool("alpha__nope", {})
