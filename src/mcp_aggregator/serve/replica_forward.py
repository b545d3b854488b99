"""Sending a 2026-07-28 retry on to the replica its call waits on.

A call that asked its client back waits, parked, in the replica that answered it
(``relay.ParkedCalls``); the client's retry carries a sealed ``requestState`` naming that
replica's address. A balancer may send the retry elsewhere: the replica it reaches posts
it, unchanged (the client's ``Authorization`` and routing headers with it), to the home
replica's endpoint and answers what that one answers. A forwarded request is marked, and
a marked request is never forwarded again, so two replicas cannot pass a retry back and
forth. What the home replica sends before its answer (progress, log lines) is not relayed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import httpx
import mcp_types as types
from mcp.shared.exceptions import MCPError

FORWARDED_HEADER: Final = "x-mcp-aggregator-forwarded"
_PASSED: Final = frozenset({"authorization", "mcp-protocol-version", "mcp-method", "mcp-name", "x-request-id"})
_CONNECT_SECS: Final = 5.0

ToolAnswer = types.CallToolResult | types.InputRequiredResult


def _answer_of(response: httpx.Response, request_id: int) -> dict[str, Any] | None:
    """The JSON-RPC answer to ``request_id`` in a JSON or event-stream response body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        messages = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    else:
        messages = [response.text]
    for raw in reversed(messages):
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if (
            isinstance(message, dict)
            and message.get("id") == request_id
            and ("result" in message or "error" in message)
        ):
            return message
    return None


async def forward_call(
    home: str,
    path: str,
    headers: Mapping[str, str],
    params: types.CallToolRequestParams,
    *,
    timeout_secs: float,
) -> ToolAnswer | None:
    """Post ``params`` as a ``tools/call`` to ``home`` + ``path``; answer its result, or None
    when that replica cannot be reached or answers nothing a client could take.

    Raises:
        MCPError: the home replica's JSON-RPC error, as it gave it.
    """
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": params.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
    sent = {name: value for name, value in headers.items() if name.lower() in _PASSED}
    sent[FORWARDED_HEADER] = "1"
    sent["accept"] = "application/json, text/event-stream"
    timeout = httpx.Timeout(timeout_secs, connect=_CONNECT_SECS)
    try:
        async with httpx.AsyncClient(timeout=timeout) as http:
            response = await http.post(home.rstrip("/") + path, json=body, headers=sent)
    except httpx.TransportError:
        return None
    message = _answer_of(response, 1)
    if message is None:
        return None
    error = message.get("error")
    if isinstance(error, dict):
        raise MCPError(error.get("code", types.INTERNAL_ERROR), str(error.get("message", "")), error.get("data"))
    result = message.get("result")
    if not isinstance(result, dict):
        return None
    if result.get("resultType") == "input_required":
        return types.InputRequiredResult.model_validate(result)
    return types.CallToolResult.model_validate(result)
