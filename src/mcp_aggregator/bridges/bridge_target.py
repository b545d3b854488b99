"""Building the in-process server of an ``openapi`` or ``a2a`` upstream for one connection."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
from mcp.server import Server

from mcp_aggregator.credentials.upstream_bearer import UpstreamBearer
from mcp_aggregator.settings import ServerConfig, Transport

RawAnswer = Callable[[dict[str, Any]], Coroutine[Any, Any, bytes]]
"""Answers one JSON-RPC request (a dict) with the response's bytes."""


@dataclass(frozen=True)
class OpenBridge:
    server: Server[Any]
    raw: RawAnswer | None = None
    """The fast path's lane: plain calls answered without the SDK's client and server."""
    mode: str | None = None
    """The era the gateway must speak to it (``legacy``); None: the server's ``protocol``."""


async def open_bridge(
    stack: AsyncExitStack,
    config: ServerConfig,
    headers: Mapping[str, str],
    secrets: Mapping[str, str],
    auth: UpstreamBearer | None = None,
) -> OpenBridge:
    """The server standing for ``config``'s upstream, its document or card read; its HTTP
    client is closed by ``stack``. ``headers`` (expanded) go with every request; ``secrets``
    (``security``, expanded) where the security schemes the document or card names say;
    ``auth`` (``auth: oauth``) signs every request with the gateway's upstream sign-in.

    Raises ``BridgeError`` naming the setting or the path in the document that is unusable.
    """
    if config.transport is Transport.OPENAPI:
        assert config.spec is not None  # guaranteed by ServerConfig validation
        # The bridges' packages load with their first server: jsonschema here, and a2a-sdk
        # (gRPC, protobuf) below cost every start ~30 MB of RSS that most configurations
        # never use (bench/startup_memory.py).
        from mcp_aggregator.bridges.openapi import OpenApiBridge

        timeout = httpx2.Timeout(config.tool_timeout_secs, connect=config.connect_timeout_secs)
        client = await stack.enter_async_context(
            httpx2.AsyncClient(headers=dict(headers), timeout=timeout, follow_redirects=False, auth=auth)
        )
        bridge = OpenApiBridge(
            config.name,
            config.spec,
            client,
            base_url=config.base_url,
            selection=config.operations,
            secrets=secrets,
            signed_in=auth is not None,
        )
        await bridge.load()
        return OpenBridge(bridge.server(), bridge.answer_raw)
    if config.transport is Transport.A2A:
        assert config.base_url is not None  # guaranteed by ServerConfig validation
        from mcp_aggregator.bridges.a2a import A2ABridge
        from mcp_aggregator.bridges.a2a.agent_bearer import AgentBearer

        # a2a-sdk speaks httpx (not httpx2); no redirects, as for every upstream.
        http = await stack.enter_async_context(
            httpx.AsyncClient(
                headers=dict(headers),
                timeout=httpx.Timeout(config.tool_timeout_secs, connect=config.connect_timeout_secs),
                auth=AgentBearer(auth.source) if auth is not None else None,
            )
        )
        agent = A2ABridge(config.name, config.base_url, http, secrets=secrets, signed_in=auth is not None)
        stack.push_async_callback(agent.aclose)
        await agent.load()
        # No raw lane: an agent's calls report progress, which only the SDK's session carries.
        # 2025-11-25: the era whose tasks the gateway relays (they left the core at 2026-07-28).
        return OpenBridge(agent.server(), mode="legacy")
    raise ValueError(f"transport {config.transport.value} is not a bridge")
