"""The era record and the listing merge, as pure functions over what was negotiated."""

from __future__ import annotations

import mcp_types as types
import pytest

from mcp_aggregator.upstreams.era_choice import SideState, era_of, merge_listings, wants_side_session

MODERN, HANDSHAKE = "2026-07-28", "2025-11-25"
LISTS = types.ServerCapabilities(tools=types.ToolsCapability(list_changed=True))


@pytest.mark.parametrize(
    ("version", "transport", "mode", "expected"),
    [
        (MODERN, "stdio", "auto", True),
        (MODERN, "http", "auto", True),
        (MODERN, "sse", "auto", False),
        (MODERN, "stdio", "legacy", False),
        (HANDSHAKE, "stdio", "auto", False),
        (None, "http", "auto", False),
    ],
)
def test_only_a_modern_main_session_reached_in_auto_mode_keeps_a_side_session(
    version: str | None, transport: str, mode: str, expected: bool
) -> None:
    assert wants_side_session(version, transport=transport, mode=mode) is expected


@pytest.mark.parametrize(
    ("version", "mode", "side", "reason_has"),
    [
        (HANDSHAKE, "legacy", SideState.NONE, "configured protocol: legacy"),
        (HANDSHAKE, "auto", SideState.NONE, "offers only the handshake era"),
        (MODERN, "auto", SideState.IDLE, "2025-11-25 side session"),
        (MODERN, "auto", SideState.UNAVAILABLE, "refused a 2025-11-25 side session"),
        (MODERN, "auto", SideState.NONE, "no side session"),
        (None, "auto", SideState.NONE, "not connected"),
    ],
)
def test_the_era_names_its_reason(version: str | None, mode: str, side: SideState, reason_has: str) -> None:
    era = era_of(version, mode=mode, side=side, side_error=None, capabilities=LISTS)
    assert reason_has in era.reason
    assert era.to_json()["side_session"]["state"] == side.value


def test_an_open_side_session_shows_its_version_and_a_failed_one_its_error() -> None:
    open_side = era_of(MODERN, mode="auto", side=SideState.OPEN, side_error=None, capabilities=LISTS).to_json()
    assert open_side["side_session"] == {"state": "open", "protocol_version": HANDSHAKE}
    assert open_side["announces_changes"] is True
    failed = era_of(
        MODERN, mode="auto", side=SideState.UNAVAILABLE, side_error="boom", capabilities=None, url_checked=True
    )
    assert failed.to_json()["side_session"] == {"state": "unavailable", "error": "boom"}
    assert failed.announces_changes is False and "health_check_url" in failed.relisting


def tool(name: str, description: str) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema={"type": "object"})


def test_the_side_listing_wins_where_it_differs_and_adds_what_only_it_has() -> None:
    main = [tool("a", "A"), tool("b", "B"), tool("gone-on-side", "G")]
    side = [tool("b", "B changed"), tool("a", "A"), tool("new", "N")]
    merged = merge_listings(main, side)
    assert [(t.name, t.description) for t in merged] == [
        ("a", "A"),
        ("b", "B changed"),
        ("gone-on-side", "G"),
        ("new", "N"),
    ]
