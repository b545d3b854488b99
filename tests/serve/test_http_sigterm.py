"""A gateway serving HTTP that gets SIGTERM (systemd, Docker and Kubernetes stop it so) stops
the gateway itself before the process ends: what it still held in memory is written.

uvicorn raises a signal it caught again once it stops serving; left to do that, SIGTERM's
default action ended the process before the gateway's own stop, losing the audit's last batch.
"""

from __future__ import annotations

import signal
import sqlite3
import sys
from pathlib import Path

import anyio
import yaml
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client

from tests.conftest import REPO, stdio_fixture
from tests.ports import free_port
from tests.processes import stop

DEADLINE = 60.0


async def test_sigterm_writes_the_audit_records_still_queued_then_ends_as_sigterm(tmp_path: Path) -> None:
    port, db = free_port(), tmp_path / "registry.db"
    config = tmp_path / "aggregator.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "servers": [stdio_fixture("alpha").model_dump(mode="json")],
                "serve": {"port": port, "data_dir": str(tmp_path / "data"), "exposure": "passthrough"},
                "registry": {"database_url": f"sqlite+aiosqlite:///{db}"},
                "search": {"embedder": "none"},
                "registries": [],
                # Far longer than the test: the record can only be written by the stop.
                "audit": {"flush_interval_secs": 60},
            }
        )
    )
    command = [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(config)]
    process = await anyio.open_process(command, cwd=REPO, stdout=None)
    try:
        assert process.stderr is not None
        lines = BufferedByteReceiveStream(process.stderr)
        with anyio.fail_after(DEADLINE):
            # The banner, once it listens, ends with Claude Desktop's block.
            while not (await lines.receive_until(b"\n", 1 << 16)).startswith(b'    {"mcpServers"'):
                pass
            async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client:
                result = await client.call_tool("alpha__echo", {"text": "kept"})
            assert not result.is_error, result
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == -signal.SIGTERM
    finally:
        if process.returncode is None:
            await stop(process)
        else:
            await process.aclose()
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT server, tool, outcome FROM audit_log WHERE method = 'tools/call'").fetchall()
    assert rows == [("alpha", "echo", "ok")]
