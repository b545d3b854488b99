from typing import Any

import mcp_types
import pytest

from mcp_aggregator.aggregate import ServerQuerySettings
from mcp_aggregator.aggregate.query_tool_detection import (
    NoQueryTool,
    QueryPlan,
    detect_query_tool,
    plan_query,
)


def tool(
    name: str, properties: dict[str, Any], required: list[str] | None = None, **extra: Any
) -> mcp_types.Tool:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return mcp_types.Tool(name=name, input_schema=schema, **extra)


STRING = {"type": "string"}
MEMORY_TOOLS = [
    tool("create_entities", {"entities": {"type": "array"}}, ["entities"]),
    tool("read_graph", {}),
    tool("search_nodes", {"query": STRING}, ["query"]),
    tool("open_nodes", {"names": {"type": "array", "items": STRING}}, ["names"]),
]


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        (MEMORY_TOOLS, QueryPlan(tool="search_nodes", argument="query")),
        ([tool("echo", {"message": STRING}, ["message"])], NoQueryTool("no usable query tool")),
        ([], NoQueryTool("no usable query tool")),
        # A required query argument beats an optional one.
        (
            [tool("a_list", {"q": STRING}), tool("z_get", {"q": STRING}, ["q"])],
            QueryPlan(tool="z_get", argument="q"),
        ),
        # A search-sounding tool name beats a better argument name.
        (
            [
                tool("summarise", {"query": STRING}, ["query"]),
                tool("search_docs", {"text": STRING}, ["text"]),
            ],
            QueryPlan(tool="search_docs", argument="text"),
        ),
        # Then the argument name's rank (a question-like name before a weak one such as
        # prompt), then the tool name.
        (
            [
                tool("search_b", {"topic": STRING}, ["topic"]),
                tool("search_a", {"prompt": STRING}, ["prompt"]),
            ],
            QueryPlan(tool="search_b", argument="topic"),
        ),
        (
            [
                tool("search_b", {"question": STRING}, ["question"]),
                tool("search_a", {"topic": STRING}, ["topic"]),
            ],
            QueryPlan(tool="search_b", argument="question"),
        ),
        (
            [tool("search_b", {"query": STRING}, ["query"]), tool("search_a", {"query": STRING}, ["query"])],
            QueryPlan(tool="search_a", argument="query"),
        ),
        # Other required properties cannot be filled, so the tool is unusable.
        (
            [tool("search", {"query": STRING, "index": STRING}, ["query", "index"])],
            NoQueryTool("no usable query tool"),
        ),
        # Optional extras are fine.
        (
            [tool("search", {"query": STRING, "limit": {"type": "integer"}}, ["query"])],
            QueryPlan("search", "query"),
        ),
        # The property must take a string.
        ([tool("search", {"query": {"type": "integer"}}, ["query"])], NoQueryTool("no usable query tool")),
        ([tool("search", {"query": {"type": ["string", "null"]}})], QueryPlan("search", "query")),
        ([tool("search", {"query": {"anyOf": [STRING, {"type": "null"}]}})], QueryPlan("search", "query")),
        # Destructive tools are never called with a user's question.
        (
            [tool("search_and_delete", {"query": STRING}, ["query"], annotations={"destructiveHint": True})],
            NoQueryTool("no usable query tool (skipped search_and_delete: destructive)"),
        ),
    ],
)
def test_detection_picks_the_best_free_text_tool_deterministically(
    tools: list[mcp_types.Tool], expected: QueryPlan | NoQueryTool
) -> None:
    assert detect_query_tool(tools) == expected
    assert detect_query_tool(list(reversed(tools))) == expected


def test_configured_tool_and_argument_are_used_as_given() -> None:
    plan = plan_query(MEMORY_TOOLS, ServerQuerySettings(query_tool="open_nodes", query_argument="names"))
    assert plan == QueryPlan(tool="open_nodes", argument="names")


def test_configured_tool_without_argument_gets_its_argument_detected() -> None:
    assert plan_query(MEMORY_TOOLS, ServerQuerySettings(query_tool="search_nodes")) == QueryPlan(
        "search_nodes", "query"
    )


def test_configured_tool_without_free_text_argument_is_reported() -> None:
    assert plan_query(MEMORY_TOOLS, ServerQuerySettings(query_tool="read_graph")) == NoQueryTool(
        "configured query tool 'read_graph' takes no free-text argument"
    )


def test_configured_tool_the_server_does_not_offer_is_reported() -> None:
    assert plan_query(MEMORY_TOOLS, ServerQuerySettings(query_tool="search")) == NoQueryTool(
        "configured query tool 'search' is not offered"
    )


def test_settings_without_a_tool_fall_back_to_detection() -> None:
    assert plan_query(MEMORY_TOOLS, ServerQuerySettings(reputation=0.9)) == QueryPlan("search_nodes", "query")


def test_arguments_template_fills_query_everywhere_and_max_results_as_integer() -> None:
    template = {
        "topic": "{query}",
        "filters": {"title": "about {query}"},
        "tags": ["{query}", 1],
        "limit": "{maxResults}",
    }
    plan = plan_query(
        [tool("lookup", {})], ServerQuerySettings(query_tool="lookup", arguments_template=template)
    )
    assert isinstance(plan, QueryPlan)
    assert plan.arguments_for("hooks", 20) == {
        "topic": "hooks",
        "filters": {"title": "about hooks"},
        "tags": ["hooks", 1],
        "limit": 20,
    }


def test_query_with_braces_is_inserted_literally() -> None:
    plan = QueryPlan(tool="t", template={"q": "{query}"})
    assert plan.arguments_for("{maxResults} {x}", 10) == {"q": "{maxResults} {x}"}


def test_plan_needs_exactly_one_way_to_pass_the_query() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        QueryPlan(tool="t")
