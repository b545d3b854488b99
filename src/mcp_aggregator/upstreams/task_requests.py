"""Requests of the 2025-11-25 tasks extension, which the SDK's typed client surface cannot send.

A task-augmented ``tools/call`` answers ``CreateTaskResult``, which the SDK's client would
refuse as an invalid ``CallToolResult``, and ``tasks/*`` have no typed method; the task relay
sends them here, over the upstream's session, with its error mapping and drain tracking.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.shared.dispatcher import CallOptions
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from mcp_aggregator.errors import UpstreamCallError
from mcp_aggregator.upstreams.connection import UpstreamConnection
from mcp_aggregator.upstreams.wire_checks import check_encodable


async def send_task_request(
    connection: UpstreamConnection, method: str, params: Mapping[str, Any], *, tag: object = None
) -> dict[str, Any]:
    """``method`` with ``params`` on ``connection``; its result as the upstream sent it.

    Handshake-era sessions only (tasks left the core protocol at 2026-07-28). Bounded by the
    tool timeout. Raises ``UpstreamError``s.
    """
    if connection.modern:
        raise UpstreamCallError(
            connection.name,
            f"{method} for a task needs a 2025-11-25 session; this upstream speaks {connection.protocol_version}",
            code=types.METHOD_NOT_FOUND,
        )
    check_encodable(dict(params), "params")
    # The header the SDK's handshake-era stamp puts on every request over HTTP.
    options: CallOptions = {"headers": {MCP_PROTOCOL_VERSION_HEADER: connection.protocol_version or ""}}

    async def send(client: Client) -> dict[str, Any]:
        # The session's dispatcher is the one way to a result the typed surface would refuse.
        result: dict[str, Any] = await client.session._dispatcher.send_raw_request(method, params, options)
        return result

    answer: dict[str, Any] = await connection.request(method, send, connection.config.tool_timeout_secs, tag=tag)
    return answer
