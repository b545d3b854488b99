"""The aggregator's query plans over the catalogue as the guardrails left it: a tool held for
its poisoned definition is never picked, nor shown to its planning."""

from __future__ import annotations

import sys

from mcp_aggregator.settings import ServerConfig
from tests.conftest import REPO, running_gateway, settings_for

POISON = {"name": "poison", "kind": "injection", "on": ["descriptions"], "action": "block"}


async def test_a_held_tool_is_not_the_querys_pick() -> None:
    server = ServerConfig(
        name="notes",
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", "tests.guardrails.poisoned_search_server", "--transport", "stdio"),
        cwd=str(REPO),
    )
    settings = settings_for(server, sections={"guardrails": [POISON]})
    async with running_gateway(settings) as (gateway, _client):
        assert [tool.name for tool in gateway.catalogue.known_tools["notes"]] == ["search_notes"]
        answer = await gateway.query({"query": "deploy steps", "servers": ["notes"]})
    assert answer["metadata"]["queriesSent"] == {"notes": {"tool": "search_notes", "queries": ["deploy steps"]}}
    assert [result["content"] for result in answer["results"]] == ["honest tool answered deploy steps"]
