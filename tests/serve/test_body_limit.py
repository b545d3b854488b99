"""Request bodies past the configured size are refused before any handler reads them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from tests.serve.http_face import API, face_settings, http_face
from tests.serve.test_host_guard import INITIALIZE, MCP_HEADERS


def registration(args_size: int) -> dict[str, object]:
    return {
        "name": "big",
        "transport_type": "STDIO",
        "connection_config": {"command": "true", "args": ["x" * args_size]},
        "auto_connect": False,
    }


async def test_a_rest_body_past_max_body_bytes_is_refused_with_413(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, max_body_bytes=4096)) as face, face.admin() as http:
        refused = await http.post(f"{API}/servers", json=registration(10_000))
        assert refused.status_code == 413
        assert refused.json() == {"detail": "request body larger than 4096 bytes (serve.max_body_bytes)"}
        assert await face.gateway.registry.list_servers() == []
        accepted = await http.post(f"{API}/servers", json=registration(100))
        assert accepted.status_code == 201, accepted.text


async def test_a_streamed_body_without_length_is_cut_off_at_the_limit(tmp_path: Path) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"name": "big", "transport_type": "STDIO", "connection_config": {"command": "true", "args": ["'
        for _ in range(64):
            yield b"y" * 1024
        yield b'"]}}'

    async with http_face(face_settings(tmp_path, max_body_bytes=4096)) as face, face.admin() as http:
        refused = await http.post(f"{API}/servers", content=chunks(), headers={"Content-Type": "application/json"})
        assert refused.status_code == 413
        assert "serve.max_body_bytes" in refused.json()["detail"]
        assert await face.gateway.registry.list_servers() == []


async def test_mcp_has_its_own_larger_limit(tmp_path: Path) -> None:
    settings = face_settings(tmp_path, max_body_bytes=1024, mcp_max_body_bytes=8192)
    async with http_face(settings) as face, face.client() as http:
        assert (await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)).status_code == 200
        padded = {**INITIALIZE, "params": {**INITIALIZE["params"], "padding": "p" * 2048}}  # type: ignore[dict-item]
        assert (await http.post("/mcp", json=padded, headers=MCP_HEADERS)).status_code == 200
        huge = {**INITIALIZE, "params": {"padding": "p" * 10_000}}
        refused = await http.post("/mcp", json=huge, headers=MCP_HEADERS)
        assert refused.status_code == 413
        assert "serve.mcp_max_body_bytes" in refused.json()["detail"]
