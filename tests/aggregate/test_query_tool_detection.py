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


def tool(name: str, properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> mcp_types.Tool:
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
    plan = plan_query([tool("lookup", {})], ServerQuerySettings(query_tool="lookup", arguments_template=template))
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


READ_ONLY = {"readOnlyHint": True}


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        # "Sounds like search" outranks "has a required text argument".
        (
            [tool("send_message", {"text": STRING}, ["text"]), tool("search", {"query": STRING})],
            QueryPlan("search", "query"),
        ),
        # A weak argument name on a tool that neither searches nor is read-only: not a query tool.
        ([tool("summarise", {"text": STRING}, ["text"])], NoQueryTool("no usable query tool")),
        ([tool("summarise", {"text": STRING}, ["text"], annotations=READ_ONLY)], QueryPlan("summarise", "text")),
        # Names and descriptions that act on the world exclude a tool.
        (
            [tool("delete_everything", {"query": STRING}, ["query"])],
            NoQueryTool("no usable query tool (skipped delete_everything: name says it writes)"),
        ),
        (
            [tool("notes", {"query": STRING}, ["query"], description="Sends the query to everyone.")],
            NoQueryTool("no usable query tool (skipped notes: description says it writes)"),
        ),
        # An explicit read-only annotation outweighs the description, not the name.
        (
            [tool("notes", {"query": STRING}, description="Posts nothing; searches.", annotations=READ_ONLY)],
            QueryPlan("notes", "query", description="Posts nothing; searches."),
        ),
        (
            [tool("searchAndPay", {"query": STRING}, annotations=READ_ONLY)],
            NoQueryTool("no usable query tool (skipped searchAndPay: name says it writes)"),
        ),
        (
            [tool("lookup", {"query": STRING}, annotations={"readOnlyHint": False})],
            NoQueryTool("no usable query tool (skipped lookup: not read-only)"),
        ),
        # Task-only tools cannot be called plainly.
        (
            [tool("simulate-research-query", {"topic": STRING}, ["topic"], execution={"taskSupport": "required"})],
            NoQueryTool("no usable query tool (skipped simulate-research-query: requires tasks)"),
        ),
        # Annotated read-only wins between two search tools.
        (
            [tool("search_a", {"query": STRING}), tool("search_b", {"query": STRING}, annotations=READ_ONLY)],
            QueryPlan("search_b", "query"),
        ),
    ],
)
def test_only_read_only_tools_are_chosen_and_search_outranks_text(
    tools: list[mcp_types.Tool], expected: QueryPlan | NoQueryTool
) -> None:
    assert detect_query_tool(tools) == expected


def test_configured_query_tool_wins_even_when_it_does_not_look_read_only() -> None:
    tools = [tool("search", {"query": STRING}), tool("delete_everything", {"query": STRING}, ["query"])]
    plan = plan_query(tools, ServerQuerySettings(query_tool="delete_everything"))
    assert plan == QueryPlan("delete_everything", "query")


def test_configured_task_only_tool_is_refused_with_the_reason() -> None:
    tools = [tool("research", {"topic": STRING}, ["topic"], execution={"taskSupport": "required"})]
    assert plan_query(tools, ServerQuerySettings(query_tool="research")) == NoQueryTool(
        "configured query tool 'research' requires task augmentation, which the aggregator does not use"
    )


@pytest.mark.parametrize(
    ("description", "argument_description", "expected"),
    [
        ("Search for nodes", "The search query to match against entity names", "literal"),
        ("Find files by glob pattern", None, "literal"),
        ("Semantic search over the docs; ask a natural-language question", None, "semantic"),
        ("Search the index", None, "auto"),
        ("Keyword or semantic search", None, "auto"),
    ],
)
def test_the_tool_s_own_words_say_whether_it_matches_literally(
    description: str, argument_description: str | None, expected: str
) -> None:
    query = {"type": "string", **({"description": argument_description} if argument_description else {})}
    plan = plan_query([tool("search", {"query": query}, ["query"], description=description)], None)
    assert isinstance(plan, QueryPlan)
    assert plan.style == expected


def test_configured_query_style_overrides_the_description() -> None:
    tools = [tool("search", {"query": STRING}, description="Semantic search")]
    plan = plan_query(tools, ServerQuerySettings(query_style="literal"))
    assert isinstance(plan, QueryPlan)
    assert plan.style == "literal"
