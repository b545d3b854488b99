"""The conformance fixture in-process, in both eras: the suite itself only speaks 2025-11-25."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import TextContent

from tests.upstream.callbacks import RecordingCallbacks, text_of
from tests.upstream.conformance_server import build_server


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_sampling_and_elicitation_reach_the_client_in_either_era(mode: str) -> None:
    callbacks = RecordingCallbacks()
    async with Client(build_server(), mode=mode, cache=None, **callbacks.client_kwargs()) as client:
        sampled = await client.call_tool("test_sampling", {"prompt": "Say hi"})
        elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})

    assert text_of(sampled) == "LLM response: Hello from the client's LLM"
    assert text_of(elicited) == 'User response: action=accept, content={"name": "Ada"}'
    assert [p.messages[0].content for p in callbacks.sampled] == [TextContent(type="text", text="Say hi")]
    assert [p.message for p in callbacks.elicited] == ["Who are you?"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_logging_and_progress_arrive_during_the_call_in_either_era(mode: str) -> None:
    logs: list[object] = []
    progress: list[float] = []

    async def on_log(params: object) -> None:
        logs.append(getattr(params, "data", None))

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    # log_level is the 2026-07-28 per-request opt-in; the handshake era uses logging/setLevel.
    async with Client(build_server(), mode=mode, cache=None, logging_callback=on_log, log_level="info") as client:
        if mode == "legacy":
            with pytest.warns(MCPDeprecationWarning):
                await client.set_logging_level("info")
        await client.call_tool("test_tool_with_logging", {})
        await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)

    assert logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]
    assert progress == [0, 50, 100]


async def test_a_client_without_sampling_gets_a_tool_error() -> None:
    async with Client(build_server(), mode="legacy", cache=None) as client:
        result = await client.call_tool("test_sampling", {"prompt": "Say hi"})

    assert result.is_error
    assert result.content == [TextContent(type="text", text="The client does not support sampling")]
