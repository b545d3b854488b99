"""Who answers an upstream's question when no client call is behind it."""

from __future__ import annotations

import mcp_types as types

from mcp_aggregator.relay import CallerBackchannel
from mcp_aggregator.upstreams.connection import UpstreamConnection
from tests.conftest import stdio_fixture


async def test_roots_asked_outside_any_call_are_the_gateways_own_workspace_roots() -> None:
    roots = [types.Root(uri="file:///srv/workspace", name="workspace")]
    backchannel = CallerBackchannel(own_roots=roots)
    idle = UpstreamConnection(stdio_fixture("alpha"))
    answer = await backchannel.server_request(idle, types.ListRootsRequest())
    assert answer == types.ListRootsResult(roots=roots)


async def test_sampling_asked_outside_any_call_is_refused_as_a_client_without_it_would() -> None:
    idle = UpstreamConnection(stdio_fixture("alpha"))
    message = types.SamplingMessage(role="user", content=types.TextContent(text="hi"))
    request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=5))
    answer = await CallerBackchannel().server_request(idle, request)
    assert isinstance(answer, types.ErrorData)
    assert answer.message == "Sampling not supported"
