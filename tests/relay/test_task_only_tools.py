"""A task-only tool of a real upstream (npm ``server-everything``'s ``simulate-research-query``,
``taskSupport: required``) called by a client that does not ask for a task: a clear error at
once, never a hang, in both client eras."""

from __future__ import annotations

import anyio
import pytest

from tests.conftest import npm_server, running_gateway, settings_for


@pytest.mark.parametrize("client_era", ["auto", "legacy"])
async def test_a_task_only_tool_called_without_a_task_answers_a_clear_error(client_era: str) -> None:
    settings = settings_for(npm_server("everything", "mcp-server-everything", "stdio"))
    async with running_gateway(settings, mode=client_era) as (gateway, client):
        tool = gateway.catalog.get("everything.simulate-research-query")
        assert tool is not None and tool.tool.execution is not None
        assert tool.tool.execution.task_support == "required"
        with anyio.fail_after(10):
            result = await client.call_tool(tool.exposed, {"topic": "gateways"})
        assert result.is_error
        text = result.content[0].text  # type: ignore[union-attr]
        assert "requires task augmentation" in text, text
