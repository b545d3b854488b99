"""``POST /api/v1/aggregator/tools/call``: call any tool by name, through the gateway's pipeline."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from mcp_aggregator.admin.admin_gateway import GatewayDep
from mcp_aggregator.admin.schemas import ToolCallResult

router = APIRouter(prefix="/api/v1/aggregator", tags=["tools"])


class NamedToolCall(BaseModel):
    """A call by the tool's canonical ``server.tool`` name (or the name a client sees)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=512)
    arguments: dict[str, Any] = Field(default_factory=dict)


@router.post(
    "/tools/call",
    responses={
        404: {"description": "No tool has this name"},
        409: {"description": "The tool is held, or several servers have the name"},
        503: {"description": "The tool's server is not CONNECTED or DEGRADED"},
    },
)
async def call_tool(gateway: GatewayDep, body: NamedToolCall) -> ToolCallResult:
    """Route ``name`` as a client's call is routed and run it through the same pipeline (its
    policy stages see it); a tool error is a 200 with ``isError``."""
    result = await gateway.call_tool(body.name, body.arguments)
    return ToolCallResult.model_validate(result.model_dump(mode="json", by_alias=True, exclude_none=True))
