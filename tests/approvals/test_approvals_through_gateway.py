"""Held calls over real parts: a real upstream that counts the calls reaching it
(``tests/upstream/tally_server.py``), real SDK clients of both eras (in process, and over
streamable HTTP), the real admin REST API and CLI.

A held call runs once when a person approves it (the client through elicitation, an admin
through REST or the CLI), and never reaches the upstream when it is denied (the client
is told why) or expires."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from mcp_aggregator.approvals.approval import Approval, ApprovalStatus
from mcp_aggregator.gateway import Gateway
from tests.caching.test_result_cache_through_gateway import tally_upstream, text
from tests.cli.conftest import run_cli
from tests.conftest import serving_gateway, settings_for
from tests.http_serving import served_over_http

ADMIN = "approvals-test-admin-token-0123456789"
API = "/api/v1/aggregator"
DEADLINE = 30


def rule(**extra: Any) -> dict[str, Any]:
    return {"name": "tallies", "tools": ["tally.tally"], "timeout_secs": 60, **extra}


class Desk:
    """Watches a gateway's approvals through the hook the page's event stream uses."""

    def __init__(self, gateway: Gateway) -> None:
        self.seen: list[Approval] = []
        self._changed = anyio.Event()
        gateway.approvals.desk.listeners.append(self._heard)

    async def _heard(self, approval: Approval) -> None:
        self.seen.append(approval)
        self._changed.set()
        self._changed = anyio.Event()

    async def next_held(self) -> Approval:
        """The next call held from now on (waits for it)."""
        start = len(self.seen)
        with anyio.fail_after(DEADLINE):
            while True:
                for approval in self.seen[start:]:
                    if approval.status is ApprovalStatus.PENDING:
                        return approval
                await self._changed.wait()


class Asked:
    """A client's elicitation handler: approves a call whose question holds ``"label": "yes"``,
    denies (with a reason) every other one; it records the questions."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.messages.append(params.message)
        if '"label": "yes"' in params.message:
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="accept", content={"approve": False, "reason": "not on a Friday"})


async def reached(client: Client) -> int:
    result = await client.call_tool("tally__reached_calls", {})
    return int(text(result))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_calling_client_approves_or_denies_a_held_call_through_elicitation_in_both_eras(mode: str) -> None:
    asked = Asked()
    settings = settings_for(tally_upstream(), sections={"approvals": [rule(ask="client")]})
    async with (
        serving_gateway(settings) as (_, gateway_server),
        Client(gateway_server.server, mode=mode, cache=None, elicitation_callback=asked) as client,
    ):
        with anyio.fail_after(DEADLINE):
            approved = await client.call_tool("tally__tally", {"label": "yes"})
        assert text(approved) == "yes #1"
        with pytest.raises(MCPError) as refused:
            await client.call_tool("tally__tally", {"label": "no", "token": "ghp_" + "a" * 36})
        assert "was denied: not on a Friday" in str(refused.value)
        assert await reached(client) == 1
    yes, no = asked.messages
    assert "Tool: tally" in yes and "Server: tally" in yes and '"label": "yes"' in yes
    assert "ghp_" not in no and "[REDACTED:" in no  # secrets masked as the guardrails mask them
