"""The engine against the real ``@modelcontextprotocol/server-memory`` (npm, stdio)."""

import json
import os
import shutil
from pathlib import Path

import pytest
from mcp.client.stdio import StdioServerParameters

from mcp_aggregator.aggregate import AggregatorEngine, AggregatorSettings, QueryRequest
from mcp_aggregator.aggregate.query_planner import keyword_queries

from .upstreams import connect_targets, dangerous_server, list_server

MEMORY_BIN = Path(__file__).resolve().parents[2] / "upstreams" / "node_modules" / ".bin" / "mcp-server-memory"

pytestmark = [
    pytest.mark.npm,
    pytest.mark.skipif(
        not MEMORY_BIN.exists() or shutil.which("node") is None,
        reason=f"needs node and @modelcontextprotocol/server-memory at {MEMORY_BIN} (run npm install in upstreams/)",
    ),
]

ENTITIES = [
    {"name": "React", "entityType": "library", "observations": ["useState hook manages component state"]},
    {"name": "Vue", "entityType": "library", "observations": ["reactive state with refs"]},
    {"name": "Postgres", "entityType": "database", "observations": ["stores rows on disk"]},
]


def memory_params(tmp_path: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(MEMORY_BIN), env={**os.environ, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    )


async def test_memory_server_entities_come_back_as_ranked_results(tmp_path: Path) -> None:
    settings = AggregatorSettings.from_mapping(
        {"servers": {"memory": {"queryTool": "search_nodes", "queryArgument": "query", "reputation": 0.8}}}
    )
    async with connect_targets({"memory": memory_params(tmp_path)}, mode="auto") as targets:
        [memory] = targets
        created = await memory.client.call_tool("create_entities", {"entities": ENTITIES})
        assert not created.is_error
        response = await AggregatorEngine(settings).query(QueryRequest("state", 30), targets)
        assert memory.calls[-1] == ("search_nodes", {"query": "state"})

    contents = [json.loads(result.content) for result in response.results]
    assert sorted(entity["name"] for entity in contents) == ["React", "Vue"]
    assert all(result.server == "memory" for result in response.results)
    assert response.metadata.to_json() | {"processingTimeMs": 0} == {
        "serversQueried": 1,
        "serversSucceeded": 1,
        "totalResultsRaw": 2,
        "totalResultsDedup": 2,
        "resultsReturned": 2,
        "processingTimeMs": 0,
        "serverDiversity": 1.0,
        "mode": "heuristic",
        "selection": "all",
        "failedServers": [],
        "skippedServers": [],
        "queriesSent": {"memory": {"tool": "search_nodes", "queries": ["state"]}},
    }


async def test_memory_search_tool_is_detected_without_configuration(tmp_path: Path) -> None:
    async with connect_targets(
        {
            "memory": memory_params(tmp_path),
            "docs": list_server("docs", ["Postgres stores rows in heap files"]),
        },
        mode="auto",
    ) as targets:
        memory = targets[0]
        await memory.client.call_tool("create_entities", {"entities": ENTITIES})
        response = await AggregatorEngine(AggregatorSettings()).query(QueryRequest("Postgres", 10), targets)
        assert memory.calls[-1] == ("search_nodes", {"query": "Postgres"})
    assert {result.server for result in response.results} == {"memory", "docs"}
    assert response.metadata.server_diversity == 1.0


SEED_QUESTION = "How do I implement React hooks for state management?"
HOOKS_AND_REDUX = [
    {
        "name": "useState",
        "entityType": "react-hook",
        "observations": ["React hook that adds local state to a function component"],
    },
    {
        "name": "useReducer",
        "entityType": "react-hook",
        "observations": ["React hook for state management with a reducer, like a small Redux store"],
    },
    {
        "name": "useContext",
        "entityType": "react-hook",
        "observations": ["React hook that reads a context, often used to share state down the tree"],
    },
    {
        "name": "Redux Toolkit",
        "entityType": "library",
        "observations": ["The official toolset for Redux state management: configureStore, createSlice"],
    },
    {
        "name": "Redux middleware",
        "entityType": "concept",
        "observations": ["Intercepts dispatched actions, e.g. redux-thunk for async logic"],
    },
]
HOOK_NAMES = {"useState", "useReducer", "useContext"}


async def test_seed_example_question_finds_the_react_hook_entities_first(tmp_path: Path) -> None:
    async with connect_targets({"memory": memory_params(tmp_path)}) as targets:
        [memory] = targets
        await memory.client.call_tool("create_entities", {"entities": HOOKS_AND_REDUX})
        whole = await memory.client.call_tool("search_nodes", {"query": SEED_QUESTION})
        response = await AggregatorEngine(AggregatorSettings()).query(QueryRequest(SEED_QUESTION, 20), targets)
        sent = [arguments["query"] for _, arguments in memory.calls]

    # The whole question, as the issue found, matches nothing in a substring search.
    assert json.loads(whole.content[0].text)["entities"] == []  # type: ignore[union-attr]
    names = [json.loads(result.content)["name"] for result in response.results]
    assert set(names[:3]) == HOOK_NAMES
    assert names[3:] == ["Redux Toolkit"]
    # The description says the query is matched against text: the question and its
    # keywords go out together, and metadata records exactly that.
    assert sorted(sent) == sorted([SEED_QUESTION, *keyword_queries(SEED_QUESTION, 6)])
    metadata = response.to_json()["metadata"]
    assert metadata["queriesSent"]["memory"] == {"tool": "search_nodes", "queries": sent}
    assert {key: metadata[key] for key in ("serversQueried", "serversSucceeded", "resultsReturned")} == {
        "serversQueried": 1,
        "serversSucceeded": 1,
        "resultsReturned": 4,
    }
    assert (metadata["totalResultsRaw"], metadata["totalResultsDedup"]) == (4, 4)


async def test_destructive_and_task_only_tools_are_never_called(tmp_path: Path) -> None:
    called: list[str] = []
    servers = {
        "memory": memory_params(tmp_path),
        "notes": dangerous_server("notes", called),
        "danger": dangerous_server("danger", called, with_safe_search=False),
    }
    # The 2025-11-25 era carries ``execution.taskSupport`` in the tool list.
    async with connect_targets(servers, mode="legacy") as targets:
        await targets[0].client.call_tool("create_entities", {"entities": HOOKS_AND_REDUX})
        response = await AggregatorEngine(AggregatorSettings()).query(QueryRequest(SEED_QUESTION, 20), targets)
        tools_called = {name for target in targets[1:] for name, _ in target.calls}

    assert tools_called == {"find_notes"}
    assert set(called) == {"find_notes"}
    metadata = response.to_json()["metadata"]
    assert (metadata["serversQueried"], metadata["serversSucceeded"]) == (2, 2)
    assert metadata["serverDiversity"] == 1.0
    assert metadata["failedServers"] == []
    [skipped] = metadata["skippedServers"]
    assert skipped["server"] == "danger"
    assert skipped["reason"] == (
        "no usable query tool (skipped delete_everything: name says it writes; "
        "search_and_purge: destructive; search_deep: requires tasks)"
    )
    assert set(metadata["queriesSent"]) == {"memory", "notes"}
