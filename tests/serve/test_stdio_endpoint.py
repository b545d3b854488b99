from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from tests.conftest import stdio_fixture, stdio_gateway


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_gateway_serves_mcp_over_stdio(tmp_path: Path, mode: str) -> None:
    params = stdio_gateway(tmp_path, stdio_fixture("alpha"))
    async with Client(params, mode=mode, cache=None) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "alpha__echo" in names
        echoed = await client.call_tool("alpha__echo", {"text": "over stdio"})
        assert echoed.content[0].text == "over stdio"  # type: ignore[union-attr]
