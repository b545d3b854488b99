"""Reading an A2A agent's card, the one way the bridge, its sign-in and ``check-config`` do it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from mcp_aggregator.errors import BridgeError

if TYPE_CHECKING:
    from a2a.types import AgentCard


async def read_agent_card(http: httpx.AsyncClient, base_url: str, *, server: str) -> AgentCard:
    """The card published at ``base_url``; raises ``BridgeError`` naming ``base_url``."""
    # a2a-sdk (gRPC, protobuf) loads with the first agent, not at every start.
    from a2a.client import A2ACardResolver
    from a2a.client.errors import A2AClientError
    from google.protobuf.json_format import ParseError

    try:
        return await A2ACardResolver(http, base_url).get_agent_card()
    except (A2AClientError, httpx.HTTPError, ParseError, ValueError) as exc:
        raise BridgeError(server, f"base_url: no usable agent card at {base_url} ({exc})") from exc
