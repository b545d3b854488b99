"""``featured_tools``: pinned first in the operator's order, then the most called."""

from __future__ import annotations

import pytest

from mcp_aggregator.facades.featured import featured_tools

SERVED = {"a.one", "a.two", "b.three", "b.four"}


@pytest.mark.parametrize(
    ("pinned", "most_called", "frequent", "expected"),
    [
        ((), ["a.one", "a.two"], 0, ()),
        (("b.three", "a.one"), [], 0, ("b.three", "a.one")),
        ((), ["a.two", "b.four", "a.one"], 2, ("a.two", "b.four")),
        (("a.two",), ["a.two", "b.four", "a.one"], 2, ("a.two", "b.four", "a.one")),
        (("gone.tool",), ["gone.other", "a.one"], 1, ("a.one",)),
        ((), ["a.one"], 5, ("a.one",)),
    ],
)
def test_featured_tools_are_the_served_pins_then_the_most_called_not_pinned(
    pinned: tuple[str, ...], most_called: list[str], frequent: int, expected: tuple[str, ...]
) -> None:
    assert featured_tools(pinned, most_called, frequent, SERVED.__contains__) == expected
