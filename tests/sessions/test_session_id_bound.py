"""A sealed session id keeps at most ``MAX_CLIENT_BYTES`` of the client's ``initialize``
params: a long client info is cut to what the gateway reads, and params still too large
are refused with a clear error instead of an id no proxy would carry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_aggregator.sessions.session_seal import MAX_CLIENT_BYTES, kept_of_client
from tests.serve.http_face import face_settings, http_face
from tests.sessions.test_resume_after_restart import HEADERS, _post

SDK_CLIENT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"sampling": {}, "roots": {"listChanged": True}},
    "clientInfo": {"name": "mcp", "version": "0.1.0"},
}
ICONS = [{"src": f"https://icons.example/{n}.png" + "?" * 200, "sizes": ["48x48"]} for n in range(40)]
LONG_INFO = {**SDK_CLIENT, "clientInfo": {"name": "mcp", "title": "MCP", "version": "1", "icons": ICONS}}
EXPERIMENTAL = {**SDK_CLIENT, "capabilities": {"roots": {}, "experimental": {"x": {"blob": "b" * 8000}}}}
TOO_LARGE = {**SDK_CLIENT, "capabilities": {"roots": {"listChanged": True, "note": "n" * 8000}}}


def test_params_that_fit_are_kept_whole() -> None:
    assert kept_of_client(SDK_CLIENT) == SDK_CLIENT


def test_a_long_client_info_is_cut_to_its_name_title_and_version() -> None:
    kept = kept_of_client(LONG_INFO)
    assert kept == {**SDK_CLIENT, "clientInfo": {"name": "mcp", "title": "MCP", "version": "1"}}


def test_experimental_capabilities_are_left_out_when_too_large() -> None:
    assert kept_of_client(EXPERIMENTAL) == {**SDK_CLIENT, "capabilities": {"roots": {}}}


def test_params_too_large_even_when_cut_are_not_kept() -> None:
    assert kept_of_client(TOO_LARGE) is None


def initialize(params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}


async def test_a_long_client_info_still_opens_a_session_with_a_short_id(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path / "data")) as face, face.client() as http:
        response = await http.post("/mcp", json=initialize(LONG_INFO), headers=HEADERS)
        assert response.status_code == 200
        session = response.headers["mcp-session-id"]
        assert len(session) < 2 * MAX_CLIENT_BYTES
        status, _ = await _post(http, session, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202
        status, messages = await _post(http, session, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert status == 200 and "tools" in messages[0]["result"]

        refused = await http.post("/mcp", json=initialize(TOO_LARGE), headers=HEADERS)
        assert refused.status_code == 400 and "mcp-session-id" not in refused.headers
        error = refused.json()["error"]
        assert error["code"] == -32602
        assert "too large for a session id (at most 4096 bytes as JSON" in error["message"]
