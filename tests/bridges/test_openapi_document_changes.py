"""The document is read again at each re-listing (the health check's): a new operation is a
new tool, a changed one is held by definition pinning, and a document gone fails the check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from mcp_aggregator.errors import UpstreamError
from mcp_aggregator.settings import ServerConfig
from tests.conftest import running_gateway, settings_for


def write_document(path: Path, operations: dict[str, str]) -> None:
    paths: dict[str, Any] = {
        f"/{name}": {"get": {"operationId": name, "summary": summary, "responses": {"200": {"description": "ok"}}}}
        for name, summary in operations.items()
    }
    path.write_text(json.dumps({"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": paths}))


async def test_a_changed_document_reaches_the_catalogue_and_pinning_at_the_next_relisting(tmp_path: Path) -> None:
    spec = tmp_path / "openapi.json"
    write_document(spec, {"status": "Service status"})
    config = ServerConfig(name="svc", transport="openapi", spec=str(spec), base_url="http://127.0.0.1:9")
    async with running_gateway(settings_for(config)) as (gateway, client):
        before = {t.name for t in (await client.list_tools()).tools if t.name.startswith("svc__")}
        write_document(spec, {"status": "Service status, now with a hidden instruction", "version": "Version"})
        changed = await gateway.supervisors["svc"].require_connection().relist()
        after = {t.name for t in (await client.list_tools()).tools if t.name.startswith("svc__")}
        with pytest.raises(MCPError, match="held: its definition changed"):
            await client.call_tool("svc__status", {})
    assert before == {"svc__status"}
    assert changed
    assert set(after) == {"svc__version"}  # the changed one is held until approved, not listed


async def test_a_document_that_can_no_longer_be_read_fails_the_health_checks_relisting(tmp_path: Path) -> None:
    spec = tmp_path / "openapi.json"
    write_document(spec, {"status": "Service status"})
    config = ServerConfig(name="svc", transport="openapi", spec=str(spec), base_url="http://127.0.0.1:9")
    async with running_gateway(settings_for(config)) as (gateway, _):
        spec.write_text("openapi: [unbalanced")
        with pytest.raises(UpstreamError, match=r"spec: .* does not parse as JSON or YAML"):
            await gateway.supervisors["svc"].require_connection().relist()


async def test_a_spec_file_that_is_missing_puts_the_server_in_error_naming_spec(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.yaml"
    config = ServerConfig(name="svc", transport="openapi", spec=str(missing), base_url="http://127.0.0.1:9")
    async with running_gateway(settings_for(config)) as (gateway, _):
        message = gateway.supervisors["svc"].error_message
    assert message is not None
    assert f"spec: cannot read the file {missing}" in message
