"""The engine against the real ``@modelcontextprotocol/server-memory`` (npm, stdio)."""

import json
import os
import shutil
from pathlib import Path

import pytest
from mcp.client.stdio import StdioServerParameters

from mcp_aggregator.aggregate import AggregatorEngine, AggregatorSettings, QueryRequest

from .upstreams import connect_targets, list_server

MEMORY_BIN = Path(__file__).resolve().parents[2] / "upstreams" / "node_modules" / ".bin" / "mcp-server-memory"

pytestmark = [
    pytest.mark.npm,
    pytest.mark.skipif(
        not MEMORY_BIN.exists() or shutil.which("node") is None,
        reason="needs node and @modelcontextprotocol/server-memory at "
        f"{MEMORY_BIN} (run npm install in upstreams/)",
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
