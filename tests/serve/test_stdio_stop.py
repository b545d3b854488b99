"""A gateway serving stdio that gets SIGTERM (as a client that started it sends when it does
not exit at once) stops its upstream servers on the way out instead of orphaning them."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.conftest import stdio_fixture, stdio_gateway
from tests.processes import children, ended

DEADLINE = 30.0


async def ask(process: Process, lines: BufferedByteReceiveStream, message: dict[str, Any]) -> dict[str, Any]:
    assert process.stdin is not None
    await process.stdin.send(json.dumps(message).encode() + b"\n")
    while True:
        answer: dict[str, Any] = json.loads(await lines.receive_until(b"\n", 1 << 20))
        if answer.get("id") == message["id"]:
            return answer


async def test_sigterm_stops_the_upstreams_with_the_gateway(tmp_path: Path) -> None:
    params = stdio_gateway(tmp_path, stdio_fixture("alpha"))
    upstreams: set[int] = set()
    async with await anyio.open_process([params.command, *params.args], cwd=params.cwd, env=params.env) as gateway:
        try:
            assert gateway.stdout is not None
            lines = BufferedByteReceiveStream(gateway.stdout)
            with anyio.fail_after(DEADLINE):
                init = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                }
                await ask(gateway, lines, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
                assert gateway.stdin is not None
                await gateway.stdin.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
                # tools/list waits for the upstream: once alpha's tools are listed, its process runs.
                listed = await ask(gateway, lines, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            assert "alpha__echo" in {tool["name"] for tool in listed["result"]["tools"]}
            upstreams = children(gateway.pid)
            assert upstreams, "the stdio upstream runs as the gateway's child"
            gateway.send_signal(signal.SIGTERM)
            with anyio.fail_after(DEADLINE):
                code = await gateway.wait()
                assert gateway.stderr is not None
                assert code == 0, (await gateway.stderr.receive(1 << 16)).decode(errors="replace")
                for pid in upstreams:
                    await ended(pid)
        finally:
            if gateway.returncode is None:
                upstreams |= children(gateway.pid)
                gateway.kill()
            for pid in upstreams:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
