"""The start listener answers on the gateway's socket before the gateway is loaded, and hands
the socket over. The end-to-end test holds the registry's migration lock on PostgreSQL, so the
gateway is certainly not past its registry (nor its search model) while ``/healthz`` is asked:
no timing involved."""

from __future__ import annotations

import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
import yaml
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from sqlalchemy import text

from mcp_aggregator.serve.start_listener import (
    HEALTH_WHILE_LOADING,
    StartListener,
    StartListenerState,
    bind_socket,
    read_request,
)
from tests.conftest import REPO
from tests.ports import free_port
from tests.processes import stop
from tests.registry.conftest import PG_URL, Database, _pg_engine_or_skip


@pytest.fixture
def listening() -> Iterator[socket.socket]:
    with bind_socket("127.0.0.1", 0) as sock:
        yield sock


def _base(sock: socket.socket) -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


async def test_healthz_and_readyz_say_starting_while_the_gateway_loads(listening: socket.socket) -> None:
    with StartListener(listening) as listener:
        async with httpx.AsyncClient(base_url=_base(listening)) as http:
            answers = [await http.get("/healthz"), await http.get("/readyz")]
        assert listener.state is StartListenerState.ANSWERING
    for answer in answers:
        # Not 200: a load balancer's check must not send clients to a gateway still loading.
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "1"
        body = {"status": "starting", "servers": {}, "tools": 0, "index": "building", "gateway": "loading"}
        assert answer.json() == body
        assert answer.headers["cache-control"] == "no-store"
    assert listener.answered == 2


async def test_other_routes_are_told_to_retry_once_the_gateway_is_up(listening: socket.socket) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"padding": "x" * 200_000}}
    with StartListener(listening):
        async with httpx.AsyncClient(base_url=_base(listening)) as http:
            # A request body is read before the answer, so the client gets the answer and
            # not a reset connection.
            mcp = await http.post("/mcp", json=init)
            admin = await http.get("/api/v1/aggregator/servers?limit=5")
    for answer in (mcp, admin):
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "1"
        assert answer.json() == {"error": "starting", "detail": "the gateway is starting; try again in a moment"}


async def test_a_connection_after_close_waits_for_the_server_that_takes_the_socket_over(
    listening: socket.socket,
) -> None:
    with StartListener(listening) as listener:
        pass
    assert listener.state is StartListenerState.CLOSED
    # Still listening: the connection is queued, not refused, and not taken by the listener.
    with socket.create_connection(listening.getsockname()[:2], timeout=5) as client:
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        listening.settimeout(5)
        conn, _ = listening.accept()
        with conn:
            conn.settimeout(5)
            assert conn.recv(4096).startswith(b"GET /healthz HTTP/1.1")
    assert listener.answered == 0


def test_a_start_listener_refuses_a_second_start(listening: socket.socket) -> None:
    listener = StartListener(listening)
    with listener:
        pass
    listener.close()
    with pytest.raises(RuntimeError, match="only once"):
        listener.__enter__()


def test_a_half_sent_request_gets_no_answer_and_does_not_stop_the_listener(listening: socket.socket) -> None:
    with StartListener(listening) as listener:
        with socket.create_connection(listening.getsockname()[:2], timeout=5) as half:
            half.sendall(b"GET /healthz HTT")
            half.shutdown(socket.SHUT_WR)
            assert half.recv(4096) == b""
        answer = httpx.get(f"{_base(listening)}/healthz", timeout=5)
    assert answer.json() == HEALTH_WHILE_LOADING
    assert listener.answered == 1


class TricklingConnection:
    """Sends one byte of a request per ``recv``, each taking ``step`` seconds of a fake clock."""

    def __init__(self, request: bytes, step: float) -> None:
        self.request = request
        self.step = step
        self.now = 0.0
        self.timeouts: list[float | None] = []

    def clock(self) -> float:
        return self.now

    def settimeout(self, value: float | None, /) -> None:
        self.timeouts.append(value)

    def recv(self, bufsize: int, /) -> bytes:
        self.now += self.step
        chunk, self.request = self.request[:1], self.request[1:]
        return chunk


def test_a_request_trickled_past_the_deadline_is_cut_off() -> None:
    conn = TricklingConnection(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", step=0.125)
    assert read_request(conn, deadline=1.0, clock=conn.clock) is None
    # Each wait is bounded by what is left of the deadline, not a fresh timeout per read.
    assert conn.timeouts == [1.0, 0.875, 0.75, 0.625, 0.5, 0.375, 0.25, 0.125]


def test_a_request_in_time_gives_its_path_and_its_body_is_read() -> None:
    request = b"POST /mcp?x=1 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
    conn = TricklingConnection(request, step=0.001)
    assert read_request(conn, deadline=1.0, clock=conn.clock) == "/mcp?x=1"
    assert conn.request == b"", "the body was read, so closing does not reset the connection"


def test_a_stalled_client_is_cut_off_and_the_listener_still_stops(listening: socket.socket) -> None:
    with (
        StartListener(listening) as listener,
        socket.create_connection(listening.getsockname()[:2], timeout=10) as stalled,
    ):
        stalled.sendall(b"GET /healthz HTT")
        assert stalled.recv(4096) == b"", "closed by the listener at its deadline"
    assert listener.state is StartListenerState.CLOSED
    assert listener.answered == 0


async def _lines_until(process: Process, log: list[str], needle: str) -> None:
    assert process.stderr is not None
    async for chunk in TextReceiveStream(process.stderr):
        log.append(chunk)
        if needle in "".join(log):
            return
    raise AssertionError(f"the gateway exited before {needle!r}:\n" + "".join(log))


@pytest.mark.postgres
async def test_serve_answers_healthz_before_the_gateway_is_loaded(tmp_path: Path) -> None:
    schema = f"mcp_t_{uuid.uuid4().hex[:12]}"
    db = Database(PG_URL, schema)
    port = free_port()
    config = {
        "serve": {"port": port, "data_dir": str(tmp_path / "data"), "admin_token": "t" * 32},
        "registry": {"database_url": db.url, "pg_schema": db.pg_schema},
    }
    path = tmp_path / "aggregator.yaml"
    path.write_text(yaml.safe_dump(config))
    engine = await _pg_engine_or_skip()
    lock = text("SELECT pg_advisory_lock(hashtext(:key))")
    unlock = text("SELECT pg_advisory_unlock(hashtext(:key))")
    key = {"key": f"mcp_aggregator.migrate.{schema}"}
    log: list[str] = []
    command = [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(path)]
    try:
        async with engine.connect() as holder:
            # The gateway's migrations wait for this lock: its registry, search model and
            # HTTP server all come after them.
            await holder.execute(lock, key)
            await holder.commit()
            process = await anyio.open_process(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
            try:
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
                    with anyio.fail_after(60):
                        await _lines_until(process, log, "while the gateway loads")
                    early = await http.get("/healthz")
                    refused = await http.get("/api/v1/aggregator/servers")
                    assert "MCP endpoint" not in "".join(log)
                    await holder.execute(unlock, key)
                    await holder.commit()
                    with anyio.fail_after(120):
                        await _lines_until(process, log, "MCP endpoint")
                    served = await http.get("/healthz")
            finally:
                await stop(process)
    finally:
        async with engine.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        await engine.dispose()
    assert early.status_code == 503
    assert early.json() == HEALTH_WHILE_LOADING
    assert refused.status_code == 503
    assert served.status_code == 200
    body = served.json()
    assert "gateway" not in body, "the gateway's own /healthz answers once it is up"
    assert body["status"] == "ok"
