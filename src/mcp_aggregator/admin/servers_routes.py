"""``/api/v1/aggregator/servers``: register, list, inspect, connect, disconnect, remove."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Body, Query, status

from mcp_aggregator.admin.admin_gateway import GatewayDep
from mcp_aggregator.admin.registration import server_config_from
from mcp_aggregator.admin.rest_client import as_rest_client
from mcp_aggregator.admin.schemas import (
    ConnectResult,
    DisconnectRequest,
    DisconnectResult,
    ServerCreate,
    ServerDetail,
    ServerPublic,
    ToolApproval,
    ToolApprovalResult,
    ToolCallRequest,
    ToolCallResult,
    ToolPublic,
)
from mcp_aggregator.admin.server_views import server_detail, server_public, tools_with_pins
from mcp_aggregator.health.server_state import ServerStatus, is_exposed
from mcp_aggregator.registry import ToolRecord

NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "Server not found"}}


router = APIRouter(prefix="/api/v1/aggregator/servers", tags=["servers"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses={409: {"description": "Server name already exists"}, 422: {"description": "Invalid"}},
)
async def register_server(gateway: GatewayDep, body: ServerCreate) -> ServerPublic:
    """Register a server (BR-001); with ``auto_connect`` a connection attempt starts.

    422 also when the server limit is reached.
    """
    config = server_config_from(body)
    record = await gateway.register_server(config, auto_connect=body.auto_connect)
    if body.auto_connect:
        # Registering asked for the connection; this lets the supervisor take the request
        # up, so the answer says CONNECTING as the contract shows, not the DISCONNECTED of
        # the moment before. (Asking again here made a server that fails at once start
        # twice, the second attempt racing the first one's ERROR.)
        await anyio.lowlevel.checkpoint()
    auth_status = await gateway.credentials.status(record.id)
    return server_public(record, gateway.supervisors.get(record.name), scrub=gateway.scrub, auth_status=auth_status)


@router.get("")
async def list_servers(
    gateway: GatewayDep,
    status_filter: Annotated[ServerStatus | None, Query(alias="status")] = None,
    include_tools: bool = False,
) -> list[ServerPublic]:
    """Every registered server, by name; ``status`` filters on the live status.

    Never waits for the registry's write-behind (a start of thousands of tools queues a
    minute of it): what it would bring is taken live. ``include_tools`` asks for the tools
    themselves, which only the registry holds with their pins: that one waits for the writes
    queued before it, as ``/servers/{id}/tools`` does."""
    if include_tools:
        await gateway.flush()
    records = await gateway.registry.list_servers()
    tools: dict[str, list[ToolRecord]] = defaultdict(list)
    if include_tools:
        for tool in await gateway.registry.list_tools():
            tools[tool.source_server_id].append(tool)
    servers = [
        server_public(
            r,
            gateway.supervisors.get(r.name),
            tools[r.id] if include_tools else None,
            scrub=gateway.scrub,
            auth_status=await gateway.credentials.status(r.id),
            tool_count=gateway.discovered_tool_count(r.name),
        )
        for r in records
    ]
    return [s for s in servers if status_filter is None or s.status is status_filter]


@router.get("/{server_id}", responses=NOT_FOUND)
async def get_server(gateway: GatewayDep, server_id: str) -> ServerDetail:
    """As one entry of the list, with more; never waits for the write-behind either."""
    record = await gateway.registry.get_server(server_id)
    auth_status = await gateway.credentials.status(record.id)
    return server_detail(
        record,
        gateway.supervisors.get(record.name),
        scrub=gateway.scrub,
        auth_status=auth_status,
        tool_count=gateway.discovered_tool_count(record.name),
    )


@router.delete("/{server_id}", status_code=status.HTTP_204_NO_CONTENT, responses=NOT_FOUND)
async def delete_server(gateway: GatewayDep, server_id: str) -> None:
    """Remove a server in any state with its tools (BR-008); a live session is closed first."""
    await gateway.remove_server_by_id(server_id)


@router.post("/{server_id}/connect", responses=NOT_FOUND)
async def connect_server(gateway: GatewayDep, server_id: str) -> ConnectResult:
    """Start connecting; the answer does not wait for the handshake.

    The contract's API table lists 409 for an already connected server, but BR-002 and
    the issue make connect idempotent: a CONNECTED (or DEGRADED, still holding its
    session) server answers 200 "Already connected" and keeps its session.
    """
    new_status = await gateway.connect_server(server_id)
    if is_exposed(new_status):
        return ConnectResult(status=new_status, message="Already connected")
    return ConnectResult(status=new_status, message="Connection initiated")


@router.post(
    "/{server_id}/disconnect",
    responses={**NOT_FOUND, 409: {"description": "The server is not CONNECTED"}},
)
async def disconnect_server(
    gateway: GatewayDep, server_id: str, body: Annotated[DisconnectRequest | None, Body()] = None
) -> DisconnectResult:
    """Drain in-flight calls (up to 30 s) or cancel them with ``force``, then close (BR-007).

    Only a CONNECTED server can be disconnected; other states answer 409 (see
    ``health.server_state``). The server's tools stay registered.
    """
    force = body.force if body is not None else False
    pending = await gateway.disconnect_server(server_id, force=force)
    return DisconnectResult(status=ServerStatus.DISCONNECTED, pending_requests=pending)


@router.get("/{server_id}/tools", responses=NOT_FOUND)
async def list_server_tools(gateway: GatewayDep, server_id: str) -> list[ToolPublic]:
    """The server's discovered tools, kept while it is disconnected (BR-007).

    With definition pinning on, each has a ``pin_status``; tools held because their
    definition changed (or, with ``security.new_tools: hold``, because they are new) come
    last, with the approved and the pending definition; ``hold_reasons`` says why a
    guardrail holds one (an injected instruction in its description, say). Waits for this
    server's queued registry writes only (brought ahead of the others').
    """
    await gateway.flush(server_id)
    record = await gateway.registry.get_server(server_id)
    tools = await gateway.registry.list_tools(record.id)
    pinning = gateway.settings.security.pin_tool_definitions
    pins = await gateway.registry.list_tool_pins(record.id) if pinning else None
    return tools_with_pins(record, tools, pins, gateway.hold_reasons)


@router.post("/{server_id}/tools/approve", responses=NOT_FOUND)
async def approve_server_tools(
    gateway: GatewayDep, server_id: str, body: Annotated[ToolApproval | None, Body()] = None
) -> ToolApprovalResult:
    """Trust the pending definitions of held tools (``tools`` empty or absent: all of them).

    Approved tools are served again at once and clients are told the tool list changed.
    404 names a tool that is not held.
    """
    names = body.tools if body is not None else []
    return ToolApprovalResult(approved=await gateway.approve_tools(server_id, names))


@router.post(
    "/{server_id}/tools/{tool_name}/call",
    responses={**NOT_FOUND, 503: {"description": "The server is not CONNECTED or DEGRADED"}},
)
async def call_server_tool(
    gateway: GatewayDep, server_id: str, tool_name: str, body: Annotated[ToolCallRequest | None, Body()] = None
) -> ToolCallResult:
    """Call one tool on this server (BR-005, explicit server); ``tool_name`` is the original name.

    A tool error is a 200 with ``isError``; a server that cannot serve calls is a 503
    naming its status.
    """
    record = await gateway.registry.get_server(server_id)
    arguments = body.arguments if body is not None else {}
    with as_rest_client():
        result = await gateway.call_tool(tool_name, arguments, server=record.name)
    return ToolCallResult.model_validate(result.model_dump(mode="json", by_alias=True, exclude_none=True))
