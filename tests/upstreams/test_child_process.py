"""A stdio server's process started from a worker thread: its protocol hears what
``subprocess_exec`` would tell it, on asyncio's loop and on uvloop (the gateway's)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

import anyio
import pytest

from mcp_aggregator.upstreams.child_process import spawn_child
from mcp_aggregator.upstreams.wire_checks import describe_error


@pytest.fixture(
    params=[pytest.param(("asyncio", {}), id="asyncio"), pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop")]
)
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    backend: tuple[str, dict[str, Any]] = request.param
    return backend


class Recorder(asyncio.SubprocessProtocol):
    def __init__(self) -> None:
        self.events: list[str] = []
        self.out: dict[int, bytes] = {1: b"", 2: b""}
        self.transport: asyncio.SubprocessTransport | None = None
        self.exited = anyio.Event()
        self.lost = anyio.Event()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport
        self.events.append("made")

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        assert isinstance(data, bytes)
        self.out[fd] += data

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.events.append(f"pipe {fd} lost")

    def process_exited(self) -> None:
        self.events.append("exited")
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.events.append("lost")
        self.lost.set()


async def spawn(*argv: str) -> tuple[asyncio.SubprocessTransport, Recorder]:
    return await spawn_child(Recorder, argv, env=dict(os.environ), cwd=None)


@pytest.mark.anyio
async def test_the_protocol_hears_output_then_the_exit_then_the_end() -> None:
    script = "import sys; print(sys.stdin.readline().upper(), end=''); print('bye', file=sys.stderr); sys.exit(3)"
    transport, recorder = await spawn(sys.executable, "-c", script)
    stdin = transport.get_pipe_transport(0)
    assert isinstance(stdin, asyncio.WriteTransport)
    stdin.write(b"hello\n")
    with anyio.fail_after(30):
        await recorder.lost.wait()
    assert recorder.out == {1: b"HELLO\n", 2: b"bye\n"}
    assert transport.get_returncode() == 3
    assert recorder.events[0] == "made" and recorder.events[-1] == "lost"
    assert {"exited", "pipe 1 lost", "pipe 2 lost"} <= set(recorder.events)
    transport.close()


@pytest.mark.anyio
async def test_the_child_leads_a_session_of_its_own() -> None:
    transport, recorder = await spawn(sys.executable, "-c", "import os; print(os.getsid(0))")
    with anyio.fail_after(30):
        await recorder.lost.wait()
    assert int(recorder.out[1]) == transport.get_pid()
    transport.close()


@pytest.mark.anyio
async def test_closing_kills_a_process_that_still_runs_and_reaps_it() -> None:
    transport, recorder = await spawn(sys.executable, "-c", "import time; time.sleep(600)")
    transport.close()
    with anyio.fail_after(30):
        await recorder.exited.wait()
    assert transport.get_returncode() == -signal.SIGKILL
    assert not await anyio.Path(f"/proc/{transport.get_pid()}").exists()  # reaped: no zombie left


@pytest.mark.anyio
async def test_a_command_that_does_not_exist_is_named_in_the_error() -> None:
    with pytest.raises(FileNotFoundError) as raised:
        await spawn("/nonexistent/mcp-server", "--stdio")
    assert describe_error(raised.value) == "command not found: /nonexistent/mcp-server"
