"""The 2026-07-28 multi-round-trip flow and 2025-11-25 call-backs through the gateway, per era.

The same fixtures the direct tests use (tests/upstream/mrtr_server.py, a modern-only
upstream, and tests/upstream/legacy_callbacks_server.py, a handshake-only one), behind a
gateway, called by real SDK clients of both eras that declare the callbacks. Every tool
must answer exactly as it does directly; the mixed pairings are the bridged ones.
"""

from __future__ import annotations

import sys

import pytest
from mcp import Client

from mcp_aggregator.settings import ServerConfig
from tests.conftest import REPO, serving_gateway, settings_for
from tests.upstream.callbacks import ROOTS, RecordingCallbacks, text_of

ROOT_LIST = ", ".join(str(root.uri) for root in ROOTS)
MRTR = {
    "mrtr_elicit_form": ({"message": "Name, please"}, 'form: action=accept, content={"name": "Ada"}'),
    "mrtr_elicit_url": ({"url": "https://example.com/pay"}, "url: action=accept"),
    "mrtr_sample": ({"prompt": "Say hi"}, "sampled: Hello from the client's LLM (model test-model)"),
    "mrtr_roots": ({}, f"roots: {ROOT_LIST}"),
    "mrtr_all_at_once": ({}, "all: sampled=Hello from the client's LLM, name=Ada, roots=2"),
    "mrtr_two_rounds": ({}, "two rounds: name=Ada, greeting=Hello from the client's LLM"),
    "mrtr_state_only": ({}, "state only: done after one empty round"),
}
LEGACY = {
    "legacy_sample": ({"prompt": "Say hi"}, "sampled: Hello from the client's LLM (model test-model)"),
    "legacy_elicit_form": ({"message": "Name, please"}, 'form: action=accept, content={"name": "Ada"}'),
    "legacy_elicit_url": ({"url": "https://example.com/pay"}, "url: action=accept"),
    "legacy_roots": ({}, f"roots: {ROOT_LIST}"),
}


def upstream(name: str, module: str) -> ServerConfig:
    return ServerConfig(
        name=name,
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", module, "--transport", "stdio"),
        cwd=str(REPO),
    )


@pytest.mark.parametrize("client_era", ["auto", "legacy"])
async def test_every_multi_round_trip_tool_answers_through_the_gateway(client_era: str) -> None:
    callbacks = RecordingCallbacks()
    settings = settings_for(upstream("mrtr", "tests.upstream.mrtr_server"))
    async with (
        serving_gateway(settings) as (gateway, gateway_server),
        Client(gateway_server.server, mode=client_era, cache=None, **callbacks.client_kwargs()) as client,
    ):
        assert gateway.connection("mrtr").modern
        for tool, (arguments, expected) in MRTR.items():
            assert text_of(await client.call_tool(f"mrtr__{tool}", arguments)) == expected, tool
    assert callbacks.roots_asked == 2
    assert len(callbacks.sampled) == 3


@pytest.mark.parametrize("client_era", ["auto", "legacy"])
async def test_every_handshake_era_call_back_answers_through_the_gateway(client_era: str) -> None:
    callbacks = RecordingCallbacks()
    settings = settings_for(upstream("old", "tests.upstream.legacy_callbacks_server"))
    async with (
        serving_gateway(settings) as (gateway, gateway_server),
        Client(gateway_server.server, mode=client_era, cache=None, **callbacks.client_kwargs()) as client,
    ):
        assert not gateway.connection("old").modern
        for tool, (arguments, expected) in LEGACY.items():
            assert text_of(await client.call_tool(f"old__{tool}", arguments)) == expected, tool
    assert callbacks.roots_asked == 1
