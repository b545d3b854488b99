"""The HTTP face in ordinary trouble: clients hanging up, sessions left idle."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from mcp_aggregator.errors import UpstreamTimeoutError
from mcp_aggregator.settings import Settings
from tests.conftest import stdio_fixture
from tests.serve.http_face import API, face_settings, http_face


class Awaited(logging.Handler):
    """Sets ``seen`` when a record whose message contains one of ``texts`` arrives."""

    def __init__(self, *texts: str) -> None:
        super().__init__(logging.DEBUG)
        self.texts = texts
        self.seen = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if any(text in record.getMessage() for text in self.texts):
            self.seen.set()


@contextmanager
def awaiting(*texts: str) -> Iterator[Awaited]:
    handler = Awaited(*texts)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


async def test_a_client_hanging_up_mid_request_is_one_info_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        # The SDK's own words for it, or ours once quietened: whichever comes.
        with awaiting("hung up mid-request", "Error handling POST request") as hangup:
            stream = await anyio.connect_tcp("127.0.0.1", face.port)
            head = (
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Length: 400\r\n\r\n"
            )
            # Half a body, then gone: the handler meets the hang-up while reading it.
            await stream.send(head.encode() + b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"')
            await stream.aclose()
            with anyio.fail_after(30):
                await hangup.seen.wait()
    hangups = [r for r in caplog.records if "hung up mid-request" in r.getMessage()]
    assert [(r.levelname, r.exc_info) for r in hangups] == [("INFO", None)]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_idle_sessions_are_closed_after_five_minutes_unless_told_otherwise() -> None:
    assert Settings.model_validate({}).serve.session_idle_secs == 300
    assert Settings.model_validate({"serve": {"session_idle_secs": 30}}).serve.session_idle_secs == 30


@pytest.mark.parametrize("value", [0, -5, "soon", float("inf"), float("nan"), 86_401])
def test_a_bad_session_idle_time_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(ValidationError, match=r"serve\.session_idle_secs"):
        Settings.model_validate({"serve": {"session_idle_secs": value}})


async def test_an_abandoned_handshake_session_is_closed_after_session_idle_secs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    settings = face_settings(tmp_path, stdio_fixture("alpha"), session_idle_secs=0.5)
    async with http_face(settings) as face, face.client(Accept="application/json, text/event-stream") as http:
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "vanishing", "version": "1"},
            },
        }
        with awaiting("idle timeout") as reaped:
            opened = await http.post("/mcp", json=initialize)
            assert opened.status_code == 200
            session = opened.headers["mcp-session-id"]
            headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
            ready = await http.post(
                "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
            )
            assert ready.status_code == 202
            # The client goes away without a word; the session is closed by its idle timer.
            with anyio.fail_after(30):
                await reaped.seen.wait()
        later = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers)
        assert later.status_code == 404


async def test_the_status_api_says_what_calls_see(tmp_path: Path) -> None:
    """Two calls in a row timing out: the API says DEGRADED, two failures, and why."""
    settings = face_settings(tmp_path, stdio_fixture("alpha", tool_timeout_secs=0.2))
    async with http_face(settings) as face, face.admin() as api:
        gateway = face.gateway
        await gateway.wait_until(lambda: gateway.supervisors["alpha"].connection is not None, timeout_secs=30)
        for _ in range(2):
            with pytest.raises(UpstreamTimeoutError):
                await gateway.call_tool("alpha.hang")
        (listed,) = (await api.get(f"{API}/servers")).json()
        assert (listed["status"], listed["consecutive_failures"]) == ("DEGRADED", 2)
        detail = (await api.get(f"{API}/servers/{listed['id']}")).json()
        assert detail["last_error"] == "alpha: timeout after 0.2s while calling tool 'hang'"
        await gateway.call_tool("alpha.echo", {"text": "fine"})
        (listed,) = (await api.get(f"{API}/servers")).json()
        assert (listed["status"], listed["consecutive_failures"]) == ("CONNECTED", 0)
