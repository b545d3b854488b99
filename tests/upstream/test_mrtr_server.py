"""The multi-round-trip fixture works directly with a 2026-07-28 SDK client that declares the callbacks."""

from __future__ import annotations

import sys

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.conftest import REPO
from tests.serve.conformance_runner import fixture_http_server
from tests.upstream.callbacks import ROOTS, RecordingCallbacks, text_of
from tests.upstream.mrtr_server import build_server

MODULE = "tests.upstream.mrtr_server"


async def test_every_mrtr_tool_is_answered_through_the_clients_callbacks() -> None:
    callbacks = RecordingCallbacks()
    async with Client(build_server(), mode="auto", cache=None, **callbacks.client_kwargs()) as client:
        assert client.protocol_version in MODERN_PROTOCOL_VERSIONS

        form = await client.call_tool("mrtr_elicit_form", {"message": "Name, please"})
        assert text_of(form) == 'form: action=accept, content={"name": "Ada"}'
        url = await client.call_tool("mrtr_elicit_url", {"url": "https://example.com/pay"})
        assert text_of(url) == "url: action=accept"
        sampled = await client.call_tool("mrtr_sample", {"prompt": "Say hi"})
        assert text_of(sampled) == "sampled: Hello from the client's LLM (model test-model)"
        roots = await client.call_tool("mrtr_roots", {})
        assert text_of(roots) == "roots: " + ", ".join(str(root.uri) for root in ROOTS)
        together = await client.call_tool("mrtr_all_at_once", {})
        assert text_of(together) == "all: sampled=Hello from the client's LLM, name=Ada, roots=2"
        state_only = await client.call_tool("mrtr_state_only", {})
        assert text_of(state_only) == "state only: done after one empty round"

    form_params, url_params, together_form = callbacks.elicited
    assert isinstance(form_params, types.ElicitRequestFormParams) and form_params.message == "Name, please"
    assert isinstance(url_params, types.ElicitRequestURLParams)
    assert (url_params.url, url_params.message) == ("https://example.com/pay", "Please confirm")
    assert isinstance(together_form, types.ElicitRequestFormParams)
    assert [p.messages[0].content for p in callbacks.sampled] == [
        types.TextContent(type="text", text="Say hi"),
        types.TextContent(type="text", text="Say something"),
    ]
    assert callbacks.roots_asked == 2


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_two_round_flow_carries_the_first_answer_in_request_state(transport: str) -> None:
    callbacks = RecordingCallbacks(name="Grace")
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable, args=["-m", MODULE, "--transport", "stdio"], cwd=str(REPO)
        )
        result = await _call_two_rounds(params, callbacks)
    else:
        async with fixture_http_server(MODULE) as url:
            result = await _call_two_rounds(url, callbacks)

    assert result == "two rounds: name=Grace, greeting=Hello from the client's LLM"
    assert len(callbacks.elicited) == 1
    assert [p.messages[0].content for p in callbacks.sampled] == [types.TextContent(type="text", text="Greet Grace")]


async def _call_two_rounds(target: str | StdioServerParameters, callbacks: RecordingCallbacks) -> str:
    async with Client(target, mode="auto", cache=None, **callbacks.client_kwargs()) as client:
        assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
        return text_of(await client.call_tool("mrtr_two_rounds", {}))
