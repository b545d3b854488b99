"""A gateway that restarts (``serve_http`` on the same registry) resumes its clients' sessions."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx

from mcp_aggregator.settings import ServerConfig
from tests.conftest import REPO
from tests.serve.http_face import face_settings, http_face

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}


def callbacks_upstream() -> ServerConfig:
    return ServerConfig(
        name="cb",
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", "tests.upstream.callbacks_server", "stdio"),
        cwd=str(REPO),
        protocol="legacy",  # type: ignore[arg-type]
    )


async def _post(http: httpx.AsyncClient, session: str | None, body: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    """The HTTP status and every JSON-RPC message of the answer (JSON or event stream)."""
    headers = dict(HEADERS)
    if session is not None:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    response = await http.post("/mcp", json=body, headers=headers)
    if response.status_code != 200:
        return response.status_code, []
    if response.headers["content-type"].startswith("application/json"):
        return 200, [response.json()]
    return 200, [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


async def _open(http: httpx.AsyncClient) -> str:
    response = await http.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}, headers=HEADERS
    )
    assert response.status_code == 200
    session = response.headers["mcp-session-id"]
    status, _ = await _post(http, session, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert status == 202
    return session


def _call(name: str, ident: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": name, "arguments": {}}}


def _text(messages: list[dict[str, Any]]) -> str:
    return str(messages[-1]["result"]["content"][0]["text"])


async def test_a_restarted_gateway_resumes_a_session_with_its_subscriptions(tmp_path: Path) -> None:
    settings = face_settings(tmp_path / "data", callbacks_upstream())
    async with http_face(settings) as face, face.client() as http:
        session = await _open(http)
        # Listing waits for the upstream's first connection; subscribing does not.
        assert (await _post(http, session, {"jsonrpc": "2.0", "id": 2, "method": "resources/list"}))[0] == 200
        subscribe = {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": "cb://counter"}}
        status, messages = await _post(http, session, subscribe)
        assert status == 200 and "result" in messages[0], messages
        status, messages = await _post(http, session, _call("cb__bump"))
        assert status == 200 and "subscribers: ['cb://counter']" in _text(messages)

    async with http_face(settings) as face, face.client() as http:
        assert (await _post(http, session, {"jsonrpc": "2.0", "id": 8, "method": "resources/list"}))[0] == 200
        status, messages = await _post(http, session, _call("cb__bump", 4))
        assert status == 200, "the session resumed in the new process"
        assert "subscribers: ['cb://counter']" in _text(messages), "its subscription was made again upstream"
        unsubscribe = {"jsonrpc": "2.0", "id": 5, "method": "resources/unsubscribe", "params": {"uri": "cb://counter"}}
        assert (await _post(http, session, unsubscribe))[0] == 200
        status, messages = await _post(http, session, _call("cb__bump", 6))
        assert status == 200 and "subscribers: []" in _text(messages)

        forged = session[:-6] + ("AAAAAA" if not session.endswith("AAAAAA") else "BBBBBB")
        assert (await _post(http, forged, _call("cb__plain", 7)))[0] == 404
