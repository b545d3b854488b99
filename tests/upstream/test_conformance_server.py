"""The conformance fixture in-process, in both eras: the suite itself only speaks 2025-11-25."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types import ResourceUpdatedNotification, TextContent, TextResourceContents

from tests.upstream.callbacks import RecordingCallbacks, text_of
from tests.upstream.conformance_content import WATCHED_URI
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


async def test_a_2025_client_subscribed_to_the_watched_resource_hears_of_its_update() -> None:
    updated = anyio.Event()
    heard: list[str] = []

    async def on_message(message: object) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            heard.append(message.params.uri)
            updated.set()

    async with Client(build_server(), mode="legacy", cache=None, message_handler=on_message) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(WATCHED_URI)
        result = await client.call_tool("update_watched_resource", {"text": "new text"})
        with anyio.fail_after(5):
            await updated.wait()
        contents = (await client.read_resource(WATCHED_URI)).contents

    assert text_of(result) == "updated; resources/subscribe subscribers notified: True"
    assert heard == [WATCHED_URI]
    assert contents == [TextResourceContents(uri=WATCHED_URI, mime_type="text/plain", text="new text")]


async def test_a_2026_client_listening_for_the_watched_resource_hears_of_its_update() -> None:
    async with (
        Client(build_server(), mode="auto", cache=None) as client,
        client.listen(resource_subscriptions=[WATCHED_URI]) as subscription,
    ):
        await client.call_tool("update_watched_resource", {"text": "new text"})
        with anyio.fail_after(5):
            event = await anext(aiter(subscription))

    assert event == ResourceUpdated(uri=WATCHED_URI)
