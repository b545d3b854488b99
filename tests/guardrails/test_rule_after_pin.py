"""A description rule added after a tool was pinned still holds that tool when the rule finds
something in it: the pin alone, made before the finding existed, does not clear it; an
admin's approval of that exact definition does, and lasts across restarts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.serve.error_mapping import TOOL_HELD
from mcp_aggregator.settings import Settings
from tests.conftest import settings_for
from tests.guardrails.conftest import leaky
from tests.http_serving import served_over_http

ADMIN_TOKEN = "rule-after-pin-token"
POISON = {"name": "poison", "kind": "injection", "on": ["descriptions"], "action": "block"}


def settings(database: Path, rules: list[dict[str, Any]]) -> Settings:
    return settings_for(leaky(), database_url=f"sqlite+aiosqlite:///{database}", sections={"guardrails": rules})


async def listed(url: str) -> set[str]:
    async with Client(url, mode="auto", cache=None) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def test_a_tool_pinned_before_a_description_rule_is_held_by_it_until_approved(tmp_path: Path) -> None:
    database = tmp_path / "registry.db"
    async with served_over_http(settings(database, [])) as served:
        assert "leaky__add" in await listed(served.mcp_url), "no rule yet: pinned and served"
        await served.gateway.flush()

    async with served_over_http(settings(database, [POISON]), admin_token=ADMIN_TOKEN) as served:
        assert "leaky__add" not in await listed(served.mcp_url)
        assert "leaky__weather" in await listed(served.mcp_url)
        async with Client(served.mcp_url, mode="auto", cache=None) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("leaky__add", {"a": 1, "b": 2})
        assert refused.value.error.code == TOOL_HELD
        assert refused.value.error.data == {"server": "leaky", "tool": "add", "reason": "flagged"}
        assert "a guardrail on tool definitions" in refused.value.error.message

        api = f"{served.base}/api/v1/aggregator"
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30) as http:
            [server] = (await http.get(f"{api}/servers")).json()
            tools = (await http.get(f"{api}/servers/{server['id']}/tools")).json()
            [held] = [tool for tool in tools if tool["original_name"] == "add"]
            assert held["pin_status"] == "flagged"
            assert held["approved_definition"] == held["pending_definition"]
            [reason] = held["hold_reasons"]
            assert "guardrail 'poison' (injection)" in reason and "credential_access" in reason
            approved = await http.post(f"{api}/servers/{server['id']}/tools/approve", json={"tools": ["add"]})
            assert approved.json() == {"approved": ["add"]}
        assert "leaky__add" in await listed(served.mcp_url)
        await served.gateway.flush()

    # The approval was of this definition with the finding: it is not asked for again.
    async with served_over_http(settings(database, [POISON])) as served:
        assert "leaky__add" in await listed(served.mcp_url)
