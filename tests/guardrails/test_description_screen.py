"""Tool definitions are judged as listed: a ``block`` holds the tool (pinning holds it as a
new tool until approved), ``mask`` serves it masked, ``flag`` serves it and records."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from mcp_aggregator.catalog.tool_pin_book import ToolPinBook
from mcp_aggregator.catalog.tool_pins import NewToolPolicy, PinStatus, review_tools, tool_definition
from mcp_aggregator.guardrails import GuardrailRule
from mcp_aggregator.guardrails.description_screen import DescriptionScreen
from mcp_aggregator.guardrails.guard import Guard
from tests.guardrails.leaky_server import POISONED


def tool(name: str, description: str) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema={"type": "object"})


def screen(action: str, heard: list[Any] | None = None) -> DescriptionScreen:
    rule = GuardrailRule.model_validate(
        {"name": "poison", "kind": "injection", "on": ["descriptions"], "action": action}
    )
    sink = None if heard is None else (lambda server, name, decisions: heard.append((server, name, decisions)))
    return DescriptionScreen(Guard([rule]), sink)


TOOLS = [tool("add", POISONED), tool("weather", "Tell the weather in a city.")]


def test_block_marks_the_poisoned_tool_to_hold_and_says_why_once() -> None:
    heard: list[Any] = []
    judge = screen("block", heard)
    served, held = judge("calc", TOOLS)
    assert held == {"add"} and [t.name for t in served] == ["add", "weather"]
    judge("calc", TOOLS)  # the periodic re-listing: judged from memory, not recorded again
    [(server, name, decisions)] = heard
    assert (server, name, decisions[0].rule) == ("calc", "add", "poison")
    [reason] = judge.reasons("calc", {"name": "add", "description": POISONED, "inputSchema": {}})
    assert "hidden_instruction" in reason and "credential_access" in reason


def test_mask_serves_the_description_with_the_instructions_masked() -> None:
    served, held = screen("mask")("calc", TOOLS)
    assert held == frozenset()
    assert "[REDACTED:hidden_instruction]" in (served[0].description or "")
    assert served[1] is TOOLS[1]


def test_a_suspect_tool_is_held_as_new_from_the_first_listing_until_approved() -> None:
    first = review_tools({}, TOOLS, new_tools=NewToolPolicy.ALLOW, suspect={"add"})
    assert [t.name for t in first.exposable] == ["weather"]
    assert first.pins["add"].status is PinStatus.NEW
    book = ToolPinBook([("s1", pin) for pin in first.pins.values()], persist=lambda server, pins: None)
    assert [t.name for t in book.review("s1", "calc", TOOLS, {"add"})] == ["weather"]
    assert book.approve("s1", ["add"]) == ["add"]
    assert [t.name for t in book.review("s1", "calc", TOOLS, {"add"})] == ["add", "weather"]


def test_with_pinning_off_a_suspect_tool_is_left_out() -> None:
    book = ToolPinBook([], persist=lambda server, pins: None, enabled=False)
    assert [t.name for t in book.review("s1", "calc", TOOLS, {"add"})] == ["weather"]


def test_a_schema_property_named_data_is_judged() -> None:
    schema = {"type": "object", "properties": {"data": {"type": "string", "description": POISONED}}}
    _, held = screen("block")("calc", [types.Tool(name="store", description="ok", input_schema=schema)])
    assert held == {"store"}


def test_the_reasons_are_those_of_the_listing_and_asking_audits_nothing() -> None:
    heard: list[Any] = []
    judge = screen("block", heard)
    titled = types.Tool(name="add", title=POISONED, description="Adds.", input_schema={"type": "object"})
    _, held = judge("calc", [titled, TOOLS[1]])
    assert held == {"add"}
    for _ in range(3):  # as the admin page asks, with the pinned definition (no title)
        [reason] = judge.reasons("calc", tool_definition(titled))
        assert "hidden_instruction" in reason
    assert judge.reasons("calc", tool_definition(TOOLS[1])) == []
    assert len(heard) == 1
    assert sum(judge.guard.counts.values()) == 1
