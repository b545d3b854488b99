from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import REPO, stdio_fixture


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_gateway_serves_mcp_over_stdio(tmp_path: Path, mode: str) -> None:
    config = {
        "servers": [stdio_fixture("alpha").model_dump(mode="json")],
        "serve": {"exposure": "passthrough"},
        "registry": {"database_url": f"sqlite+aiosqlite:///{tmp_path}/registry.db"},
        "search": {"embedder": "none"},
    }
    path = tmp_path / "aggregator.yaml"
    path.write_text(yaml.safe_dump(config))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_aggregator", "serve", "--transport", "stdio", "--config", str(path)],
        cwd=str(REPO),
    )
    async with Client(params, mode=mode, cache=None) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "alpha__echo" in names
        echoed = await client.call_tool("alpha__echo", {"text": "over stdio"})
        assert echoed.content[0].text == "over stdio"  # type: ignore[union-attr]
