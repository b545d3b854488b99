"""An upstream sees, on each 2026-07-28 request, the capabilities of the client it is made for."""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import urlsplit

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPError

from mcp_aggregator.settings import ServerConfig
from mcp_aggregator.upstreams.caller_capabilities import CAPABILITIES_KEY, narrowed, narrowing_stamp
from tests.conftest import REPO, settings_for
from tests.http_serving import served_over_http

GATEWAY = {
    "sampling": {"tools": {}},
    "elicitation": {"form": {}, "url": {}},
    "roots": {"listChanged": True},
    "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}},
    "experimental": {"x": {}},
}


@pytest.mark.parametrize(
    ("caller", "declared"),
    [
        ({}, {"experimental": {"x": {}}}),
        ({"sampling": {}}, {"sampling": {}, "experimental": {"x": {}}}),
        (
            {"elicitation": {"form": {}}, "roots": {}, "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": []}}},
            {
                "elicitation": {"form": {}},
                "roots": {},
                "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": []}},
                "experimental": {"x": {}},
            },
        ),
        ({"extensions": {"com.example/other": {}}, "tasks": {}}, {"experimental": {"x": {}}}),
    ],
)
def test_an_upstream_is_declared_only_what_both_the_caller_and_the_gateway_declare(
    caller: dict[str, Any], declared: dict[str, Any]
) -> None:
    assert narrowed(GATEWAY, caller) == declared


def test_the_stamp_puts_the_callers_declaration_in_place_of_the_sessions() -> None:
    def sdk_stamp(data: dict[str, Any], opts: Any) -> None:
        data["params"].setdefault("_meta", {})[CAPABILITIES_KEY] = GATEWAY

    def handshake_stamp(data: dict[str, Any], opts: Any) -> None:
        pass

    request = {"method": "tools/call", "params": {"name": "t", "_meta": {CAPABILITIES_KEY: {}, "progressToken": 1}}}
    narrowing_stamp(sdk_stamp)(request, None)
    assert request["params"]["_meta"] == {CAPABILITIES_KEY: {"experimental": {"x": {}}}, "progressToken": 1}
    made_for_nobody = {"method": "tools/call", "params": {"name": "t"}}
    narrowing_stamp(sdk_stamp)(made_for_nobody, None)
    assert made_for_nobody["params"]["_meta"] == {CAPABILITIES_KEY: GATEWAY}
    old_era = {"method": "tools/call", "params": {"name": "t", "_meta": {CAPABILITIES_KEY: {}}}}
    narrowing_stamp(handshake_stamp)(old_era, None)
    assert old_era["params"]["_meta"] == {}, "a 2025-11-25 upstream refuses the reserved keys"


def gated() -> ServerConfig:
    return ServerConfig(
        name="gated",
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", "tests.upstream.capability_gated_server", "--transport", "stdio"),
        cwd=str(REPO),
    )


async def sample(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text="hi"), model="m")


async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def envelope(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }


async def test_a_tool_needing_a_capability_the_client_lacks_is_refused_with_32021_and_http_400() -> None:
    async with served_over_http(settings_for(gated())) as served:
        async with Client(served.mcp_url, cache=None) as bare:
            with pytest.raises(MCPError) as refused:
                await bare.call_tool("gated__needs_sampling", {})
            assert refused.value.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
            assert refused.value.error.data == {"requiredCapabilities": {"sampling": {}}}
            assert text(await bare.call_tool("gated__ask_what_you_can", {})) == "nothing to ask"
        async with Client(served.mcp_url, cache=None, sampling_callback=sample) as sampler:
            assert text(await sampler.call_tool("gated__needs_sampling", {})) == "sampling declared"
        async with Client(served.mcp_url, cache=None, elicitation_callback=elicit) as asker:
            assert text(await asker.call_tool("gated__ask_what_you_can", {})) == "answered: ['ask']"
        # RFC 9110: the spaces around a field value are not part of it (httpx refuses to send them).
        status, answer = await raw_post(served.mcp_url, "gated__needs_sampling", mcp_name="  gated__needs_sampling \t")
        assert status == 400
        assert answer["error"]["code"] == types.MISSING_REQUIRED_CLIENT_CAPABILITY


async def raw_post(url: str, tool: str, *, mcp_name: str) -> tuple[int, dict[str, Any]]:
    """A 2026-07-28 ``tools/call`` written by hand on the socket: its status and JSON answer."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {}, "_meta": envelope({})},
        }
    ).encode()
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {mcp_name}\r\n"
        f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    async with await anyio.connect_tcp(parts.hostname, parts.port) as stream:
        await stream.send(head.encode() + body)
        received = b""
        with anyio.fail_after(30):
            while True:
                try:
                    received += await stream.receive()
                except anyio.EndOfStream:
                    break
    status_line, _, rest = received.partition(b"\r\n")
    answer = json.loads(rest.partition(b"\r\n\r\n")[2])
    return int(status_line.split()[1]), answer
