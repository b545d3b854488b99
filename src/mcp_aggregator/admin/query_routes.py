"""``POST /api/v1/aggregator/query``: the aggregator query over REST."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body
from fastapi.responses import JSONResponse

from mcp_aggregator.admin.admin_gateway import GatewayDep
from mcp_aggregator.admin.rest_client import as_rest_client
from mcp_aggregator.aggregate import QUERY_TOOL_INPUT_SCHEMA, QUERY_TOOL_OUTPUT_SCHEMA

_ERROR_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"detail": {}}, "required": ["detail"]}


router = APIRouter(prefix="/api/v1/aggregator", tags=["query"])


@router.post(
    "/query",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": QUERY_TOOL_INPUT_SCHEMA}},
        }
    },
    responses={
        200: {
            "description": "Ranked results. Beyond the contract's fields, metadata reports "
            "failedServers and skippedServers ([{server, reason}]: timeout, connection refused, "
            "no usable query tool, unavailable), queriesSent, mode, selection and llmFallback.",
            "content": {"application/json": {"schema": QUERY_TOOL_OUTPUT_SCHEMA}},
        },
        422: {
            "description": 'Invalid query parameters: {"detail": {"field", "reason"}}',
            "content": {"application/json": {"schema": _ERROR_SCHEMA}},
        },
        502: {
            "description": "Aggregation failed: all servers unavailable",
            "content": {"application/json": {"schema": _ERROR_SCHEMA}},
        },
    },
)
async def query(gateway: GatewayDep, arguments: Annotated[dict[str, Any], Body()]) -> JSONResponse:
    """Fan the query out to the selected servers; ranked, deduplicated results.

    The body is the MCP tool's arguments, validated by the gateway itself so that a
    refusal reads the same as over MCP. Servers that failed or could not be asked are
    listed, with the reason, in ``metadata.failedServers`` / ``metadata.skippedServers``.
    """
    with as_rest_client():
        return JSONResponse(await gateway.query(arguments))
