"""The engine against real MCP servers: in-process ``MCPServer``s and stdio subprocesses."""

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from itertools import combinations
from typing import Any

import anyio
import jsonschema
import mcp_types
import pytest
from rapidfuzz.distance import Levenshtein

from mcp_aggregator.aggregate import (
    QUERY_TOOL_OUTPUT_SCHEMA,
    AggregatorEngine,
    AggregatorSettings,
    QueryRequest,
    QueryResponse,
    QueryTarget,
    ServerFailure,
)
from mcp_aggregator.aggregate.dedup import normalise
from mcp_aggregator.errors import AggregationFailedError

from .upstreams import (
    ExplodingTarget,
    UpstreamServer,
    calculator_server,
    connect_targets,
    hanging_server,
    json_server,
    list_server,
    protocol_error_server,
    recording_server,
    stdio_params,
    tool_error_server,
)

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
NOW_TEXT = "2026-11-21T12:00:00.000Z"
FAST = {"serverTimeoutSecs": 0.2, "totalTimeoutSecs": 60}

ALPHA_DOCS = [
    "React hooks let you use state and other React features without writing a class.",
    "useEffect runs side effects after render in React components.",
    "Context provides a way to pass data through the component tree.",
]
BETA_DOCS = [
    # The same as ALPHA's first once normalised, then a near duplicate of its second.
    "react   hooks let you use state and other react features without writing a class",
    "useEffect runs side-effects after rendering in React components.",
    "Redux is a predictable state container for JavaScript apps.",
]
GAMMA_ITEMS = [
    {"title": "Vue composition API manages reactive state", "updated_at": "2026-11-01T00:00:00Z"},
    {"title": "Svelte stores hold state outside components", "date": "2025-01-01"},
]


def engine(**raw: Any) -> AggregatorEngine:
    return AggregatorEngine(AggregatorSettings.from_mapping({**FAST, **raw}), clock=lambda: NOW)


def request(query: str = "react hooks state", max_results: int = 30, servers: Sequence[str] = ()) -> QueryRequest:
    return QueryRequest(query=query, max_results=max_results, servers=tuple(servers))


def distinct_count(contents: Sequence[str], threshold: float) -> int:
    """Clusters of (near-)duplicates, by union-find over every pair: independent of dedup.py."""
    parent = list(range(len(contents)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    norms = [normalise(c) for c in contents]
    for i, j in combinations(range(len(contents)), 2):
        if norms[i] == norms[j] or Levenshtein.normalized_similarity(norms[i], norms[j]) > threshold:
            parent[root(j)] = root(i)
    return len({root(i) for i in range(len(contents))})


def without_time(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "metadata": {**payload["metadata"], "processingTimeMs": None}}


async def test_results_from_several_servers_are_ranked_deduplicated_and_counted() -> None:
    servers = {
        "alpha": list_server("alpha", ALPHA_DOCS),
        "beta": list_server("beta", BETA_DOCS),
        "gamma": json_server("gamma", GAMMA_ITEMS),
    }
    async with connect_targets(servers) as targets:
        response = await engine().query(request(), targets)

    payload = response.to_json()
    jsonschema.validate(payload, QUERY_TOOL_OUTPUT_SCHEMA)
    raw_contents = [*ALPHA_DOCS, *BETA_DOCS, *(json.dumps(i, separators=(",", ":")) for i in GAMMA_ITEMS)]
    distinct = distinct_count(raw_contents, 0.8)
    assert distinct == 6
    results = payload["results"]
    assert [r["rank"] for r in results] == list(range(1, distinct + 1))
    assert all(set(r) == {"content", "server", "relevanceScore", "rank", "timestamp"} for r in results)
    assert all(r["timestamp"] == NOW_TEXT for r in results)
    assert [r["relevanceScore"] for r in results] == sorted((r["relevanceScore"] for r in results), reverse=True)
    assert {r["content"] for r in results} <= set(raw_contents)
    assert payload["metadata"] == {
        "serversQueried": 3,
        "serversSucceeded": 3,
        "totalResultsRaw": len(raw_contents),
        "totalResultsDedup": distinct,
        "resultsReturned": len(results),
        "processingTimeMs": payload["metadata"]["processingTimeMs"],
        "serverDiversity": round(len({r["server"] for r in results}) / 3, 4),
        "mode": "heuristic",
        "selection": "all",
        "failedServers": [],
        "skippedServers": [],
        "queriesSent": {
            "alpha": {"tool": "search", "queries": ["react hooks state"]},
            "beta": {"tool": "search", "queries": ["react hooks state"]},
            "gamma": {"tool": "find_documents", "queries": ["react hooks state"]},
        },
    }
    assert isinstance(payload["metadata"]["processingTimeMs"], int)
    assert response.failures == ()


async def test_highest_ranked_instance_of_a_duplicate_stays() -> None:
    servers = {"alpha": list_server("alpha", ALPHA_DOCS[:1]), "beta": list_server("beta", BETA_DOCS[:1])}
    async with connect_targets(servers) as targets:
        response = await engine(servers={"beta": {"reputation": 1.0}}).query(request(), targets)
    assert [(r.server, r.content) for r in response.results] == [("beta", BETA_DOCS[0])]
    assert response.metadata.server_diversity == 0.5


async def test_same_query_twice_gives_identical_output_apart_from_processing_time() -> None:
    servers = {
        "alpha": list_server("alpha", ALPHA_DOCS),
        "beta": list_server("beta", BETA_DOCS),
        "gamma": json_server("gamma", GAMMA_ITEMS),
    }
    aggregator = engine()
    async with connect_targets(servers) as targets:
        first = await aggregator.query(request(), targets)
        second = await aggregator.query(request(), list(reversed(targets)))
    assert without_time(first.to_json()) == without_time(second.to_json())


async def test_max_results_caps_the_answer_and_metadata_says_so() -> None:
    docs = [f"document {i} about hooks number {i * 7919 % 1000} in topic {chr(65 + i % 26)}" * 3 for i in range(40)]
    async with connect_targets({"big": list_server("big", docs)}) as targets:
        response = await engine(dedupThreshold=1.0).query(request("hooks", max_results=10), targets)
    assert response.metadata.results_returned == 10
    assert response.metadata.total_results_raw == 40
    assert response.metadata.total_results_dedup == 40
    assert [r.rank for r in response.results] == list(range(1, 11))


async def test_server_past_its_timeout_is_reported_and_the_others_still_answer() -> None:
    servers = {"fast": list_server("fast", ALPHA_DOCS), "slow": hanging_server("slow")}
    async with connect_targets(servers) as targets:
        response = await engine().query(request(), targets)
        # The cancelled call left the session usable.
        assert (await targets[1].client.list_tools()).tools
    assert response.failures == ("slow: timeout after 0.2s",)
    meta = response.metadata
    assert (meta.servers_queried, meta.servers_succeeded, meta.total_results_raw) == (2, 1, 3)
    assert meta.server_diversity == 0.5
    assert {r.server for r in response.results} == {"fast"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_timed_out_call_is_cancelled_on_the_upstream_server(mode: str) -> None:
    cancelled = anyio.Event()
    async with connect_targets({"slow": hanging_server("slow", cancelled)}, mode=mode) as targets:
        with pytest.raises(AggregationFailedError):
            await engine().query(request(), targets)
        with anyio.fail_after(5):
            await cancelled.wait()


async def test_total_timeout_returns_what_has_arrived() -> None:
    servers = {"fast": list_server("fast", ALPHA_DOCS), "slow": hanging_server("slow")}
    aggregator = engine(serverTimeoutSecs=60, totalTimeoutSecs=0.2)
    async with connect_targets(servers) as targets:
        response = await aggregator.query(request(), targets)
    assert response.failures == ("slow: timeout after 0.2s (total)",)
    assert response.metadata.results_returned == 3


async def test_every_server_failing_raises_aggregation_failed_with_each_reason() -> None:
    servers: dict[str, UpstreamServer] = {
        "context7": hanging_server("context7"),
        "serena": protocol_error_server("serena", "connection refused"),
        "broken": tool_error_server("broken", "index offline"),
        "calc": calculator_server("calc"),
        "crashy": stdio_params("crash"),
    }
    rules = [{"pattern": ".*", "servers": [*servers, "offline"]}]
    async with connect_targets(servers) as targets:
        with pytest.raises(AggregationFailedError) as caught:
            await engine(serverRules=rules).query(request(), targets)
    assert str(caught.value) == "Aggregation failed: all servers unavailable"
    assert caught.value.attempted == ["context7", "serena", "broken", "calc", "crashy", "offline"]
    assert caught.value.errors == [
        "context7: timeout after 0.2s",
        "serena: connection refused",
        "broken: Error executing tool search: index offline",
        "calc: no usable query tool",
        "crashy: connection closed",
        "offline: unavailable",
    ]


async def test_one_success_among_failures_is_a_partial_answer() -> None:
    servers = {
        "broken": tool_error_server("broken", "index offline"),
        "ok": list_server("ok", ["react hooks"]),
        "calc": calculator_server("calc"),
    }
    async with connect_targets(servers) as targets:
        response = await engine().query(request(), targets)
    assert [r.content for r in response.results] == ["react hooks"]
    assert response.failures == ("broken: Error executing tool search: index offline", "calc: no usable query tool")
    # calc has no query tool: it is not asked, so not counted (seed 000, metadata accuracy).
    assert (response.metadata.servers_queried, response.metadata.servers_succeeded) == (2, 1)
    assert response.metadata.server_diversity == 0.5
    metadata = response.to_json()["metadata"]
    assert metadata["failedServers"] == [{"server": "broken", "reason": "Error executing tool search: index offline"}]
    assert metadata["skippedServers"] == [{"server": "calc", "reason": "no usable query tool"}]


async def test_no_available_server_at_all_is_an_aggregation_failure() -> None:
    async with connect_targets({"ok": list_server("ok", ["a"])}) as targets:
        with pytest.raises(AggregationFailedError) as caught:
            await engine().query(request(servers=["docs"]), targets)
    assert (caught.value.attempted, caught.value.errors) == (["docs"], ["docs: unavailable"])


async def test_rule_named_servers_that_are_not_connected_are_not_counted_as_queried() -> None:
    rules = [{"pattern": "hooks", "servers": ["ok", "offline"]}]
    async with connect_targets({"ok": list_server("ok", ["react hooks"])}) as targets:
        response = await engine(serverRules=rules).query(request(), targets)
    assert response.metadata.servers_queried == 1
    assert response.metadata.server_diversity == 1.0
    assert response.metadata.skipped == (ServerFailure("offline", "unavailable"),)
    assert response.metadata.failed == ()


async def test_rules_pick_servers_and_explicit_servers_override_them() -> None:
    servers = {"docs": list_server("docs", ["docs answer"]), "code": list_server("code", ["code answer"])}
    rules = [{"pattern": "LIBRARY", "servers": ["docs"]}]
    aggregator = engine(serverRules=rules)
    async with connect_targets(servers) as targets:
        by_rule = await aggregator.query(request("which library?"), targets)
        explicit = await aggregator.query(request("which library?", servers=["code"]), targets)
        fallback = await aggregator.query(request("anything else"), targets)
        docs, code = targets
        assert (len(docs.calls), len(code.calls)) == (2, 2)
    assert [r.server for r in by_rule.results] == ["docs"]
    assert [r.server for r in explicit.results] == ["code"]
    assert {r.server for r in fallback.results} == {"docs", "code"}


async def test_configured_tool_gets_the_templated_arguments() -> None:
    seen: list[dict[str, Any]] = []
    settings = {
        "servers": {"kb": {"queryTool": "lookup", "argumentsTemplate": {"topic": "{query}", "limit": "{maxResults}"}}}
    }
    async with connect_targets({"kb": recording_server("kb", seen)}) as targets:
        response = await engine(**settings).query(request("hooks", max_results=20), targets)
    assert seen == [{"topic": "hooks", "limit": 20}]
    assert [r.content for r in response.results] == ["entry about hooks"]


async def test_detected_tool_gets_the_query_in_its_free_text_argument() -> None:
    seen: list[dict[str, Any]] = []
    async with connect_targets({"kb": recording_server("kb", seen)}) as targets:
        await engine().query(request("hooks"), targets)
        assert targets[0].calls == [("lookup", {"topic": "hooks"})]
    assert seen == [{"topic": "hooks", "limit": 5}]


async def test_huge_result_is_truncated_and_loses_to_short_ones() -> None:
    huge = "react hooks state " * 60_000
    servers = {"huge": list_server("huge", [huge]), "short": list_server("short", ["react hooks state"])}
    async with connect_targets(servers) as targets:
        response = await engine().query(request(), targets)
    assert [r.server for r in response.results] == ["short", "huge"]
    assert len(response.results[1].content) == 10_000
    assert response.results[1].breakdown.length_penalty == pytest.approx(2000 / len(huge.strip()), rel=1e-3)


async def test_subprocess_server_over_stdio_answers() -> None:
    async with connect_targets({"sub": stdio_params("search"), "local": list_server("local", ALPHA_DOCS)}) as targets:
        response = await engine().query(request(), targets)
    assert response.metadata.servers_succeeded == 2
    assert {r.server for r in response.results} == {"sub", "local"}


async def test_server_answering_with_no_results_succeeded_but_did_not_contribute() -> None:
    servers = {"empty": list_server("empty", []), "ok": list_server("ok", ["react"])}
    async with connect_targets(servers) as targets:
        response = await engine().query(request(), targets)
    assert (response.metadata.servers_succeeded, response.metadata.server_diversity) == (2, 0.5)


async def test_response_becomes_a_tool_result_with_text_and_structured_content() -> None:
    async with connect_targets({"ok": list_server("ok", ALPHA_DOCS)}) as targets:
        response = await engine().query(request(), targets)
    result = response.to_call_tool_result()
    [block] = result.content
    assert isinstance(block, mcp_types.TextContent)
    assert json.loads(block.text) == response.to_json() == result.structured_content
    assert '"results":[{"content":' in block.text


async def test_unexpected_error_in_one_target_is_logged_and_does_not_sink_the_query(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with connect_targets({"ok": list_server("ok", ["react"])}) as targets:
        all_targets: list[QueryTarget] = [ExplodingTarget(), *targets]
        with caplog.at_level(logging.ERROR, logger="mcp_aggregator.aggregate.engine"):
            response = await engine().query(request(), all_targets)
    assert response.failures == ("buggy: internal error (RuntimeError)",)
    assert "unexpected error from server buggy" in caplog.text


def assert_valid(response: QueryResponse) -> None:
    jsonschema.validate(response.to_json(), QUERY_TOOL_OUTPUT_SCHEMA)
