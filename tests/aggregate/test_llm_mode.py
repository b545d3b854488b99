"""Seed 002's LLM-agent mode against a scripted Messages API over real HTTP, with real
upstream MCP servers; and its fallbacks to the heuristic mode."""

import json
from typing import Any

import anyio
import jsonschema

from mcp_aggregator.aggregate import (
    QUERY_TOOL_OUTPUT_SCHEMA,
    AggregatorEngine,
    AggregatorSettings,
    QueryRequest,
    QueryTarget,
    ServerFailure,
)

from .messages_api import BLOCK, HttpError, ScriptedMessagesApi, serve_messages_api, text, tool_use
from .upstreams import ExplodingTarget, connect_targets, dangerous_server, literal_server

NOTES = [
    "React hooks: useState adds state to function components",
    "useReducer manages complex state transitions",
    "Postgres stores rows in heap files",
]
DOCS = [
    "Redux Toolkit simplifies state management",
    "React context shares values without prop drilling",
]
QUESTION = "How do I implement React hooks for state management?"
KEY_ENV = {"ANTHROPIC_API_KEY": "sk-test"}


def llm_engine(base_url: str | None, environ: dict[str, str], **llm: Any) -> AggregatorEngine:
    settings = AggregatorSettings.from_mapping(
        {
            "mode": "llm",
            "totalTimeoutSecs": 60,
            "llm": {"model": "claude-test", "maxTurns": 3, "requestTimeoutSecs": 30, **llm},
        }
    )
    env = {**environ, **({"ANTHROPIC_BASE_URL": base_url} if base_url else {})}
    return AggregatorEngine(settings, environ=env)


def upstreams(seen_notes: list[str], seen_docs: list[str], called: list[str]) -> dict[str, Any]:
    return {
        "notes": literal_server("notes", NOTES, seen_notes),
        "docs": literal_server("docs", DOCS, seen_docs),
        "danger": dangerous_server("danger", called, with_safe_search=False),
    }


async def test_model_chooses_the_tools_and_the_results_in_the_output_contract() -> None:
    api = ScriptedMessagesApi(
        [
            tool_use(("notes__search", {"query": "hook"}), ("docs__search", {"query": "state management"})),
            tool_use(("notes__search", {"query": "useReducer"})),
            tool_use(("submit_results", {"result_ids": ["r2", "r1", "r3"]})),
        ]
    )
    seen_notes: list[str] = []
    seen_docs: list[str] = []
    called: list[str] = []
    async with (
        serve_messages_api(api) as url,
        connect_targets(upstreams(seen_notes, seen_docs, called), mode="legacy") as targets,
    ):
        response = await llm_engine(url, KEY_ENV).query(QueryRequest(QUESTION, 10), targets)

    assert (seen_notes, seen_docs, called) == (["hook", "useReducer"], ["state management"], [])
    first = api.requests[0]
    assert first["model"] == "claude-test"
    assert first["messages"] == [{"role": "user", "content": QUESTION}]
    # Only read-only query tools are offered, one per server that has one, plus the finish.
    assert [tool["name"] for tool in first["tools"]] == ["notes__search", "docs__search", "submit_results"]
    # The key from the configured environment variable (the SDK sends it as a bearer token).
    assert "sk-test" in (
        api.headers[0].get("x-api-key"),
        api.headers[0].get("authorization", "").removeprefix("Bearer "),
    )
    # The model sees numbered results; r1 is the notes hit, r2 the docs hit.
    second_turn = api.requests[1]["messages"]
    replies = {block["tool_use_id"]: block["content"] for block in second_turn[2]["content"]}
    assert replies == {
        "toolu_0_notes__search": f"[r1] {NOTES[0]}",
        "toolu_1_docs__search": f"[r2] {DOCS[0]}",
    }
    # The last allowed turn is forced to finish.
    assert api.requests[2]["tool_choice"] == {"type": "tool", "name": "submit_results"}

    payload = response.to_json()
    jsonschema.validate(payload, QUERY_TOOL_OUTPUT_SCHEMA)
    assert [(r["content"], r["server"], r["rank"]) for r in payload["results"]] == [
        (DOCS[0], "docs", 1),
        (NOTES[0], "notes", 2),
        (NOTES[1], "notes", 3),
    ]
    scores = [r["relevanceScore"] for r in payload["results"]]
    assert scores == sorted(scores, reverse=True) and all(0.5 < s <= 1.0 for s in scores)
    metadata = payload["metadata"]
    assert metadata["mode"] == "llm"
    assert "llmFallback" not in metadata
    assert (metadata["serversQueried"], metadata["serversSucceeded"], metadata["totalResultsRaw"]) == (2, 2, 3)
    assert metadata["queriesSent"] == {
        "notes": {"tool": "search", "queries": ["hook", "useReducer"]},
        "docs": {"tool": "search", "queries": ["state management"]},
    }
    assert metadata["skippedServers"] == [
        {
            "server": "danger",
            "reason": "no usable query tool (skipped delete_everything: name says it writes; "
            "search_and_purge: destructive; search_deep: requires tasks)",
        }
    ]


async def test_model_ending_without_choosing_keeps_what_it_found_in_heuristic_order() -> None:
    api = ScriptedMessagesApi([tool_use(("notes__search", {"query": "state"})), text("Here you go.")])
    async with serve_messages_api(api) as url, connect_targets(upstreams([], [], []), mode="legacy") as targets:
        response = await llm_engine(url, KEY_ENV).query(QueryRequest(QUESTION, 10), targets)
    assert {r.content for r in response.results} == {NOTES[0], NOTES[1]}
    assert response.metadata.mode == "llm"


async def test_bad_tool_calls_get_an_error_result_and_the_loop_goes_on() -> None:
    api = ScriptedMessagesApi(
        [
            tool_use(("danger__delete_everything", {"query": "x"}), ("notes__search", {"q": "hook"})),
            tool_use(("notes__search", {"query": "hook"})),
            tool_use(("submit_results", {"result_ids": ["r1", "r99"]})),
        ]
    )
    called: list[str] = []
    async with serve_messages_api(api) as url, connect_targets(upstreams([], [], called), mode="legacy") as targets:
        response = await llm_engine(url, KEY_ENV).query(QueryRequest(QUESTION, 10), targets)
    errors = api.requests[1]["messages"][2]["content"]
    assert [(block["is_error"], block["content"]) for block in errors] == [
        (True, "unknown tool 'danger__delete_everything'"),
        (True, "give a non-empty 'query' string"),
    ]
    assert called == []
    assert [r.content for r in response.results] == [NOTES[0]]


async def test_without_an_api_key_the_heuristic_mode_answers_and_says_why() -> None:
    seen: list[str] = []
    async with connect_targets({"notes": literal_server("notes", NOTES, seen)}) as targets:
        response = await llm_engine(None, {}).query(QueryRequest(QUESTION, 10), targets)
    metadata = response.to_json()["metadata"]
    assert (metadata["mode"], metadata["llmFallback"]) == ("heuristic", "no API key (ANTHROPIC_API_KEY is not set)")
    assert [r.content for r in response.results][:2] == NOTES[:2]
    assert seen[0] == QUESTION


async def test_an_api_error_falls_back_to_the_heuristic_mode() -> None:
    api = ScriptedMessagesApi([HttpError(500, "overloaded, try later")])
    async with (
        serve_messages_api(api) as url,
        connect_targets({"notes": literal_server("notes", NOTES, [])}) as targets,
    ):
        response = await llm_engine(url, KEY_ENV).query(QueryRequest(QUESTION, 10), targets)
    assert response.metadata.mode == "heuristic"
    assert response.metadata.llm_fallback == "Messages API error 500: overloaded, try later"
    assert len(api.requests) == 1
    assert response.metadata.results_returned == 2


async def test_a_request_timeout_falls_back_to_the_heuristic_mode() -> None:
    api = ScriptedMessagesApi([BLOCK])
    async with (
        serve_messages_api(api) as url,
        connect_targets({"notes": literal_server("notes", NOTES, [])}) as targets,
    ):
        with anyio.fail_after(30):
            response = await llm_engine(url, KEY_ENV, requestTimeoutSecs=0.3).query(QueryRequest(QUESTION, 10), targets)
        # The server really held the request: the client gave up on its own timeout.
        assert api.blocked.is_set() and not api.release.is_set()
    assert response.metadata.llm_fallback == "Messages API request timed out after 0.3s"
    assert response.metadata.mode == "heuristic"


async def test_the_whole_agent_is_bounded_by_its_own_timeout() -> None:
    api = ScriptedMessagesApi([BLOCK])
    async with (
        serve_messages_api(api) as url,
        connect_targets({"notes": literal_server("notes", NOTES, [])}) as targets,
    ):
        response = await llm_engine(url, KEY_ENV, timeoutSecs=0.3).query(QueryRequest(QUESTION, 10), targets)
    assert response.metadata.llm_fallback == "timeout after 0.3s"


async def test_a_model_that_queries_nothing_hands_over_to_the_heuristic_mode() -> None:
    api = ScriptedMessagesApi([text("I know this one by heart.")])
    async with (
        serve_messages_api(api) as url,
        connect_targets({"notes": literal_server("notes", NOTES, [])}) as targets,
    ):
        response = await llm_engine(url, KEY_ENV).query(QueryRequest(QUESTION, 10), targets)
    assert response.metadata.llm_fallback == "the model queried no server"
    assert json.loads(response.to_text())["metadata"]["mode"] == "heuristic"


async def test_a_tool_learned_to_match_literally_is_described_so_to_the_model() -> None:
    api = ScriptedMessagesApi(
        [HttpError(529, "overloaded"), tool_use(("notes__search", {"query": "hook"})), text("done")]
    )
    async with (
        serve_messages_api(api) as url,
        connect_targets({"notes": literal_server("notes", NOTES, [])}) as targets,
    ):
        aggregator = llm_engine(url, KEY_ENV)
        # The API fails: the heuristic mode answers, finds nothing for the whole question and
        # something for its keywords, and so learns that the tool matches literally.
        first = await aggregator.query(QueryRequest(QUESTION, 10), targets)
        second = await aggregator.query(QueryRequest(QUESTION, 10), targets)
    assert first.metadata.llm_fallback == "Messages API error 529: overloaded"
    assert "matches text literally" in api.requests[1]["tools"][0]["description"]
    assert second.metadata.mode == "llm"


async def test_an_adapter_bug_in_one_call_is_reported_to_the_model_and_the_turn_goes_on() -> None:
    api = ScriptedMessagesApi(
        [
            tool_use(("buggy__search", {"query": "hook"}), ("notes__search", {"query": "hook"})),
            tool_use(("submit_results", {"result_ids": ["r1"]})),
        ]
    )
    async with (
        serve_messages_api(api) as url,
        connect_targets({"notes": literal_server("notes", NOTES, [])}) as targets,
    ):
        all_targets: list[QueryTarget] = [ExplodingTarget(), *targets]
        response = await llm_engine(url, KEY_ENV).query(QueryRequest(QUESTION, 10), all_targets)
    replies = api.requests[1]["messages"][2]["content"]
    assert [(block["is_error"], block["content"]) for block in replies] == [
        (True, "internal error (RuntimeError)"),
        (False, f"[r1] {NOTES[0]}"),
    ]
    assert response.metadata.failed == (ServerFailure("buggy", "internal error (RuntimeError)"),)
    assert [r.content for r in response.results] == [NOTES[0]]
