"""Every HTTP request has an id: in ``X-Request-Id``, on its access line, on the lines logged while serving it."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from mcp_aggregator.serve.request_ids import request_id_from
from tests.conftest import REPO
from tests.ports import free_port
from tests.serve.http_face import API, face_settings, http_face


def test_a_sane_client_id_is_kept_and_anything_else_replaced() -> None:
    assert request_id_from([(b"x-request-id", b"trace-42.a:b_c")]) == "trace-42.a:b_c"
    for bad in (b"", b"has space", b"x" * 129, b"semi;colon"):
        made = request_id_from([(b"x-request-id", bad)])
        assert made != bad.decode() and len(made) == 16
    assert request_id_from([]) != request_id_from([])


async def test_the_response_and_the_access_line_carry_the_same_id(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_aggregator.access")
    async with http_face(face_settings(tmp_path)) as face, face.admin() as http:
        refused = await http.post(f"{API}/servers", json={"name": "Bad"}, headers={"X-Request-Id": "mine-1"})
        assert refused.status_code == 422 and refused.headers["x-request-id"] == "mine-1"
        made = await http.get(f"{API}/servers")
        assert len(made.headers["x-request-id"]) == 16
    lines = [r.getMessage() for r in caplog.records if r.name == "mcp_aggregator.access"]
    assert any(
        line.startswith("POST /api/v1/aggregator/servers 422 ") and "request_id=mine-1" in line for line in lines
    )
    assert not any("GET /api/v1/aggregator/servers 200" in line for line in lines), "reads log at DEBUG"


def test_serve_with_log_format_json_writes_one_object_a_line_with_the_request_id(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "aggregator.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "serve": {"port": port, "data_dir": str(tmp_path / "data")},
                "registry": {"database_url": f"sqlite+aiosqlite:///{tmp_path}/registry.db"},
                "search": {"embedder": "none"},
            }
        )
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(config), "--log-format", "json"],
        cwd=REPO, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    try:
        token = ""
        for line in process.stderr:  # the banner, once it listens, ends with Claude Desktop's block
            if line.startswith("  Admin page"):
                token = line.rsplit("#token=", 1)[1].strip()
            if line.startswith('    {"mcpServers"'):
                break
        assert next(process.stderr) == "\n"
        headers = {"Authorization": f"Bearer {token}", "X-Request-Id": "json-7"}
        answer = httpx.delete(f"http://127.0.0.1:{port}{API}/servers/none", headers=headers)
        assert answer.status_code == 404
        for line in process.stderr:
            if not line.startswith("{"):
                raise AssertionError(f"not a JSON line: {line!r}")
            parsed = json.loads(line)
            if parsed["logger"] == "mcp_aggregator.access":
                break
        assert parsed["request_id"] == "json-7"
        assert parsed["level"] == "INFO" and parsed["message"].startswith("DELETE /api/v1/aggregator/servers/none 404")
        assert set(parsed) >= {"time", "level", "logger", "message", "request_id"}
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()
