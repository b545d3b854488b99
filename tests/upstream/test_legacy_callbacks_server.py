"""The legacy-callbacks fixture works directly with a 2025-11-25 SDK client that declares the callbacks."""

from __future__ import annotations

import sys

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import REPO
from tests.serve.conformance_runner import fixture_http_server
from tests.upstream.callbacks import ROOTS, RecordingCallbacks, text_of
from tests.upstream.legacy_callbacks_server import CONFIRM_URL_ID, build_server

MODULE = "tests.upstream.legacy_callbacks_server"


async def test_tools_reach_the_clients_callbacks_logs_and_progress_during_the_call() -> None:
    callbacks = RecordingCallbacks()
    logs: list[types.LoggingMessageNotificationParams] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    client = Client(build_server(), mode="legacy", cache=None, logging_callback=on_log, **callbacks.client_kwargs())
    async with client:
        assert client.protocol_version == "2025-11-25"
        sampled = await client.call_tool("legacy_sample", {"prompt": "Say hi"})
        assert text_of(sampled) == "sampled: Hello from the client's LLM (model test-model)"
        form = await client.call_tool("legacy_elicit_form", {"message": "Name, please"})
        assert text_of(form) == 'form: action=accept, content={"name": "Ada"}'
        url = await client.call_tool("legacy_elicit_url", {"url": "https://example.com/pay"})
        assert text_of(url) == "url: action=accept"
        roots = await client.call_tool("legacy_roots", {})
        assert text_of(roots) == "roots: " + ", ".join(str(root.uri) for root in ROOTS)
        logged = await client.call_tool("legacy_log_and_progress", {"steps": 2}, progress_callback=on_progress)
        assert text_of(logged) == "done after 2 steps"

    assert [(log.level, log.data, log.logger) for log in logs] == [
        ("info", "step 1 of 2", "legacy-callbacks"),
        ("info", "step 2 of 2", "legacy-callbacks"),
    ]
    assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]
    form_params, url_params = callbacks.elicited
    assert isinstance(form_params, types.ElicitRequestFormParams) and form_params.message == "Name, please"
    assert isinstance(url_params, types.ElicitRequestURLParams)
    assert (url_params.url, url_params.elicitation_id) == ("https://example.com/pay", CONFIRM_URL_ID)
    assert callbacks.roots_asked == 1


async def _call_elicit_then_sample(target: str | StdioServerParameters, callbacks: RecordingCallbacks) -> str:
    async with Client(target, mode="auto", cache=None, **callbacks.client_kwargs()) as client:
        assert client.protocol_version == "2025-11-25"
        return text_of(await client.call_tool("legacy_elicit_then_sample", {}))


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_auto_client_falls_back_to_the_handshake_and_is_asked_twice_in_one_call(transport: str) -> None:
    callbacks = RecordingCallbacks(name="Grace")
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable, args=["-m", MODULE, "--transport", "stdio"], cwd=str(REPO)
        )
        result = await _call_elicit_then_sample(params, callbacks)
    else:
        async with fixture_http_server(MODULE) as url:
            result = await _call_elicit_then_sample(url, callbacks)

    assert result == "name=Grace; sampled: Hello from the client's LLM (model test-model)"
    assert [p.messages[0].content for p in callbacks.sampled] == [types.TextContent(type="text", text="Greet Grace")]


async def test_a_client_without_sampling_gets_a_tool_error_naming_the_refusal() -> None:
    async with Client(build_server(), mode="legacy", cache=None) as client:
        result = await client.call_tool("legacy_sample", {"prompt": "Say hi"})

    assert result.is_error
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert block.text.startswith("client request failed: ")
