"""The names of the facade domains: valid, unique, and a server's own name kept where it is free."""

from __future__ import annotations

import pytest

from mcp_aggregator.aggregate import QUERY_TOOL_NAME
from mcp_aggregator.serve.surfaces import domain_names


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        (["alpha", "beta"], {"alpha": "alpha", "beta": "beta"}),
        (["tools"], {"tools": "tools_server"}),
        (["tools", "tools_server"], {"tools": "tools_server2", "tools_server": "tools_server"}),
        (["web.search", "web_search"], {"web.search": "web_search_server", "web_search": "web_search"}),
        ([QUERY_TOOL_NAME], {QUERY_TOOL_NAME: f"{QUERY_TOOL_NAME}_server"}),
        (["x" * 70], {"x" * 70: "x" * 64}),
        (["files", "x" * 64], {"files": "files_server", "x" * 64: "x" * 64}),
    ],
)
def test_domain_names_are_valid_unique_and_keep_free_names(groups: list[str], expected: dict[str, str]) -> None:
    reserved = {"tools", "servers", "aggregator", "files", QUERY_TOOL_NAME}
    assert domain_names(groups, reserved, "_server") == expected
    assert domain_names(list(reversed(groups)), reserved, "_server") == expected
