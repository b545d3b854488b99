"""Values crossing the sandbox wall."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import mcp_types as types
import pytest

from mcp_aggregator.code_mode.script_values import jsonable, tool_error_text, tool_value


def text(*parts: str) -> list[types.ContentBlock]:
    return [types.TextContent(text=part) for part in parts]


@pytest.mark.parametrize(
    ("result", "value"),
    [
        (types.CallToolResult(content=text("{}"), structured_content={"total": 3}), {"total": 3}),
        (types.CallToolResult(content=text("3"), structured_content={"result": 3}), 3),
        (types.CallToolResult(content=text("a", "b")), "a\nb"),
        (types.CallToolResult(content=[]), ""),
        (
            types.CallToolResult(content=[types.ImageContent(data="AA==", mime_type="image/png")]),
            [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
        ),
    ],
)
def test_call_tool_returns_structured_content_else_text(result: types.CallToolResult, value: Any) -> None:
    assert tool_value(result) == value


def test_an_error_result_without_text_still_says_something() -> None:
    assert tool_error_text(types.CallToolResult(content=[], is_error=True)) == (
        "the tool reported an error without a message"
    )
    assert tool_error_text(types.CallToolResult(content=text(" nope "), is_error=True)) == "nope"


class Proxy:
    """Stands for a ``MontyClassProxy``: an instance of a class the script defined."""

    def __init__(self) -> None:
        self.attributes = {"x": 1}


@pytest.mark.parametrize(
    ("value", "data"),
    [
        ((1, "a"), [1, "a"]),
        ({3, 1, 2}, [1, 2, 3]),
        ({"b", "a"}, ["a", "b"]),
        (b"hi", "aGk="),
        (dt.date(2026, 1, 2), "2026-01-02"),
        (float("nan"), "nan"),
        (Decimal("1.50"), "1.50"),
        ({1: (2,)}, {"1": [2]}),
        (Proxy(), {"x": 1}),
    ],
)
def test_a_scripts_value_becomes_plain_json(value: Any, data: Any) -> None:
    assert jsonable(value) == data
