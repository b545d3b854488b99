"""What the engine sends each server: the question, keyword sub-queries, or both."""

from collections.abc import Awaitable, Callable, Sequence

import pytest
from mcp.server import MCPServer

from mcp_aggregator.aggregate import AggregatorEngine, AggregatorSettings, QueryRequest
from mcp_aggregator.errors import SearchError

from .upstreams import connect_targets, list_server, literal_server

NOTES = [
    "React hooks replace class lifecycle methods",
    "State management with Redux Toolkit",
    "Postgres stores rows in heap files",
]
QUESTION = "How do React hooks work?"


def engine(**raw: object) -> AggregatorEngine:
    return AggregatorEngine(AggregatorSettings.from_mapping({"totalTimeoutSecs": 60, **raw}))


def semantic_server(name: str, seen: list[str]) -> MCPServer:
    app = MCPServer(name)

    @app.tool()
    def search(query: str) -> list[str]:
        """Semantic search: ask a natural-language question."""
        seen.append(query)
        return []

    return app


async def test_zero_hits_on_the_question_retries_with_keywords_and_the_tool_is_learned_literal() -> None:
    seen: list[str] = []
    aggregator = engine()
    async with connect_targets({"notes": literal_server("notes", NOTES, seen)}) as targets:
        first = await aggregator.query(QueryRequest(QUESTION, 10), targets)
        assert seen[0] == QUESTION
        assert sorted(seen[1:]) == sorted(["react hook", "react", "hook"])
        seen.clear()
        # Learned: the next question goes out whole and as keywords at once, even though
        # the whole of it finds something on its own.
        second = await aggregator.query(QueryRequest("react hooks", 10), targets)
        fresh = await engine().query(QueryRequest("react hooks", 10), targets)

    assert [r.content for r in first.results] == [NOTES[0]]
    assert first.to_json()["metadata"]["queriesSent"]["notes"]["queries"][0] == QUESTION
    assert sorted(second.metadata.sent[0][1].queries) == sorted(["react hooks", "react hook", "react", "hook"])
    assert fresh.metadata.sent[0][1].queries == ("react hooks",)
    assert [r.content for r in second.results] == [NOTES[0]]


async def test_semantic_tool_gets_only_the_question_even_with_zero_hits() -> None:
    seen: list[str] = []
    async with connect_targets({"docs": semantic_server("docs", seen)}) as targets:
        response = await engine().query(QueryRequest(QUESTION, 10), targets)
    assert seen == [QUESTION]
    assert (response.metadata.servers_succeeded, response.metadata.results_returned) == (1, 0)


async def test_configured_literal_style_sends_keywords_from_the_start() -> None:
    seen: list[str] = []
    settings = {"servers": {"notes": {"queryStyle": "literal"}}, "maxKeywordQueries": 2}
    async with connect_targets({"notes": literal_server("notes", NOTES, seen)}) as targets:
        response = await engine(**settings).query(QueryRequest("state management in Redux", 10), targets)
    assert sorted(seen) == sorted(["state management in Redux", "state management", "redux"])
    assert [r.content for r in response.results] == [NOTES[1]]
    # Two sub-queries found the same note: it counts once.
    assert response.metadata.total_results_raw == 1


def finder(found: Sequence[str], calls: list[str]) -> Callable[[str, int], Awaitable[list[str]]]:
    async def tool_search(query: str, k: int) -> list[str]:
        calls.append(f"{query}|{k}")
        return list(found)

    return tool_search


async def test_without_a_rule_the_tool_search_index_picks_the_servers() -> None:
    calls: list[str] = []
    servers = {"a": list_server("a", ["react a"]), "b": list_server("b", ["react b"])}
    aggregator = AggregatorEngine(
        AggregatorSettings.from_mapping({"toolSearchK": 7, "toolSearchMinServers": 1}),
        tool_search=finder(["b", "unknown", "b"], calls),
    )
    async with connect_targets(servers) as targets:
        response = await aggregator.query(QueryRequest("react", 10), targets)
        ruled = await AggregatorEngine(
            AggregatorSettings.from_mapping(
                {"serverRules": [{"pattern": "react", "servers": ["a"]}], "toolSearchMinServers": 1}
            ),
            tool_search=finder(["b"], calls),
        ).query(QueryRequest("react", 10), targets)
    assert calls == ["react|7"]
    assert [r.server for r in response.results] == ["b"]
    assert (response.metadata.servers_queried, response.metadata.selection) == (1, "toolSearch")
    assert (ruled.metadata.selection, [r.server for r in ruled.results]) == ("rule", ["a"])


async def test_tool_search_failing_or_disabled_means_every_server_is_asked(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(query: str, k: int) -> list[str]:
        raise SearchError("index not built")

    servers = {"a": list_server("a", ["react a"]), "b": list_server("b", ["react b"])}
    async with connect_targets(servers) as targets:
        failing = await AggregatorEngine(
            AggregatorSettings.from_mapping({"toolSearchMinServers": 1}), tool_search=broken
        ).query(QueryRequest("react", 10), targets)
        few = await AggregatorEngine(AggregatorSettings(), tool_search=finder(["b"], [])).query(
            QueryRequest("react", 10), targets
        )
        disabled = await AggregatorEngine(
            AggregatorSettings.from_mapping({"toolSearchSelection": False}), tool_search=finder(["b"], [])
        ).query(QueryRequest("react", 10), targets)
    assert (failing.metadata.selection, failing.metadata.servers_queried) == ("all", 2)
    assert (disabled.metadata.selection, disabled.metadata.servers_queried) == ("all", 2)
    # Two servers are not more than the default toolSearchMinServers (8): all are asked.
    assert (few.metadata.selection, few.metadata.servers_queried) == ("all", 2)
    assert "tool search failed" in caplog.text
