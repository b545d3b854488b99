"""Every facade command, driven by a real MCP client against a running gateway with real upstreams.

The tests that change nothing share one gateway over two fixture upstreams (each gateway start
costs a stdio upstream process per server and over a second of CPU); each connects a client of
its own. A test that changes a gateway, or needs settings of its own, starts its own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.mcp_server import GatewayServer
from tests.conftest import npm_server, running_gateway, serving_gateway, settings_for, stdio_fixture, writes
from tests.held import held

pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, so that they can share its gateway."""


def envelope_of(result: types.CallToolResult) -> dict[str, Any]:
    """The one text block of a facade answer, parsed; ``is_error`` must mirror ``ok``."""
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    envelope: dict[str, Any] = json.loads(block.text)
    assert result.is_error is (not envelope["ok"])
    assert result.structured_content is None
    return envelope


async def call(client: Client, tool: str, cmd: str, params: dict[str, Any] | None = None, **extra: Any) -> Any:
    arguments: dict[str, Any] = {"cmd": cmd, **extra}
    if params is not None:
        arguments["params"] = params
    return envelope_of(await client.call_tool(tool, arguments))


async def indexed(gateway: Gateway) -> None:
    """Wait until search has indexed every tool (the index loop runs behind discovery)."""
    await gateway.wait_until(gateway.index_ready, timeout_secs=10)


def upstream_tools(gateway: Gateway, server: str) -> list[str]:
    """The tool names the upstream itself lists, in its order."""
    connection = gateway.supervisors[server].connection
    assert connection is not None
    return [tool.name for tool in connection.tools]


def two_fixtures(**serve: Any) -> Any:
    return settings_for(stdio_fixture("alpha"), stdio_fixture("beta"), exposure="facades", **serve)


Shared = tuple[Gateway, GatewayServer]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared() -> AsyncIterator[Shared]:
    """The gateway over ``alpha`` and ``beta`` with its MCP server, for the tests that only read
    (an upstream's tool error is an answer, not a failure: it leaves the health figures as they were)."""
    async with held(serving_gateway(two_fixtures())) as both:
        yield both


async def test_tools_search_ranks_tools_with_scores_and_filters_by_server(shared: Shared) -> None:
    gateway, gateway_server = shared
    async with Client(gateway_server.server, mode="auto", cache=None) as client:
        await indexed(gateway)
        found = await call(client, "tools", "search", {"query": "add two integers"})
        assert found["ok"] and found["cmd"] == "search"
        assert found["count"] == len(found["data"]) > 0
        assert found["data"][0]["name"] in ("alpha.add", "beta.add")
        assert found["data"][0]["args"] == "a, b" and isinstance(found["data"][0]["score"], float)

        only_beta = await call(client, "tools", "search", {"query": "add two integers", "server": "beta", "k": 2})
        assert [hit["server"] for hit in only_beta["data"]] == ["beta"] * only_beta["count"]
        assert only_beta["data"][0]["name"] == "beta.add" and only_beta["count"] <= 2

        minimal = await call(client, "tools", "search", {"query": "echo"}, detail="minimal")
        assert minimal["data"][0] in (
            {"name": "alpha.echo", "server": "alpha"},
            {"name": "beta.echo", "server": "beta"},
        )


async def test_tools_list_pages_through_the_catalog_in_a_stable_order(shared: Shared) -> None:
    gateway, gateway_server = shared
    async with Client(gateway_server.server, mode="auto", cache=None) as client:
        every = [f"{s}.{t}" for s in ("alpha", "beta") for t in upstream_tools(gateway, s)]
        first = await call(client, "tools", "list", {"limit": 10}, detail="minimal")
        assert first["count"] == 10
        assert first["data"]["items"][:2] == [
            {"name": "alpha.echo", "server": "alpha"},
            {"name": "alpha.add", "server": "alpha"},
        ]
        pages = [first]
        while "nextCursor" in pages[-1]["data"]:
            cursor = pages[-1]["data"]["nextCursor"]
            pages.append(await call(client, "tools", "list", {"limit": 10, "cursor": cursor}, detail="minimal"))
        assert [page["count"] for page in pages[:-1]] == [10] * (len(pages) - 1)
        assert [item["name"] for page in pages for item in page["data"]["items"]] == every

        beta = await call(client, "tools", "list", {"server": "beta"})
        assert [i["name"] for i in beta["data"]["items"]] == [f"beta.{t}" for t in upstream_tools(gateway, "beta")]
        assert beta["data"]["items"][1] == {
            "name": "beta.add",
            "server": "beta",
            "description": "Add two integers.",
            "args": "a, b",
        }


async def test_tools_get_accepts_canonical_exposed_and_unique_original_names(shared: Shared) -> None:
    _, gateway_server = shared
    async with Client(gateway_server.server, mode="auto", cache=None) as client:
        full = await call(client, "tools", "get", {"name": "alpha.add"}, detail="full")
        assert full["data"]["name"] == "alpha.add" and full["data"]["originalName"] == "add"
        assert full["data"]["inputSchema"]["required"] == ["a", "b"]
        assert full["data"]["outputSchema"]["properties"]["total"]["type"] == "integer"
        echo = await call(client, "tools", "get", {"name": "alpha__echo"}, detail="full")
        assert echo["data"]["annotations"] == {"readOnlyHint": True}
        dotted = await call(client, "tools", "get", {"name": "beta.api.v2.create"}, detail="minimal")
        assert dotted["data"] == {"name": "beta.api.v2.create", "server": "beta"}


async def test_tools_get_of_a_name_two_servers_offer_is_refused_naming_both(shared: Shared) -> None:
    _, gateway_server = shared
    async with Client(gateway_server.server, mode="auto", cache=None) as client:
        ambiguous = await call(client, "tools", "get", {"name": "search"})
        assert ambiguous == {
            "ok": False,
            "cmd": "get",
            "error": "Tool name 'search' is ambiguous: offered by servers alpha, beta; call it as '<server>.search'",
        }
        run = await call(client, "tools", "execute", {"name": "echo", "arguments": {"text": "x"}})
        assert not run["ok"] and "ambiguous" in run["error"]


async def test_tools_execute_calls_the_upstream_and_returns_its_answer_in_the_envelope(shared: Shared) -> None:
    _, gateway_server = shared
    async with Client(gateway_server.server, mode="auto", cache=None) as client:
        added = await call(client, "tools", "execute", {"name": "beta.add", "arguments": {"a": 2, "b": 40}})
        assert added == {"ok": True, "cmd": "execute", "data": {"total": 42}}
        echoed = await call(client, "tools", "execute", {"name": "alpha__echo", "arguments": {"text": "hi"}})
        # The SDK's MCPServer wraps a returned str as {"result": ...}; the envelope unwraps it.
        assert echoed == {"ok": True, "cmd": "execute", "data": "hi"}
        full = await call(
            client, "tools", "execute", {"name": "alpha.echo", "arguments": {"text": "hi"}}, detail="full"
        )
        assert full["data"]["content"] == [{"type": "text", "text": "hi"}]


async def test_an_upstream_tool_error_comes_back_as_ok_false_with_the_upstream_text(shared: Shared) -> None:
    _, gateway_server = shared
    async with Client(gateway_server.server, mode="auto", cache=None) as client:
        failed = await call(client, "tools", "execute", {"name": "alpha.fail", "arguments": {"message": "disk full"}})
        # MCPServer hides the exception text of an unexpected error; the upstream's text is kept as is.
        assert failed == {"ok": False, "cmd": "execute", "error": "Error executing tool fail"}


async def test_tools_execute_of_a_crashed_server_reports_the_lost_session_in_the_envelope() -> None:
    async with running_gateway(settings_for(stdio_fixture("alpha"), exposure="facades")) as (_gateway, client):
        crashed = await call(client, "tools", "execute", {"name": "alpha.crash"})
        assert crashed["ok"] is False and crashed["error"].startswith("alpha: ")
        again = await call(client, "tools", "execute", {"name": "alpha.echo", "arguments": {"text": "x"}})
        assert again["ok"] is False and "alpha" in again["error"]


async def test_tools_validate_checks_arguments_without_calling(shared: Shared) -> None:
    _, gateway_server = shared
    async with Client(gateway_server.server, mode="auto", cache=None) as client:
        bad = await call(client, "tools", "validate", {"name": "alpha.add", "arguments": {"a": "two"}})
        assert bad["ok"] and bad["data"]["valid"] is False
        fields = {error["field"] for error in bad["data"]["errors"]}
        assert "arguments.a" in fields or "arguments.b" in fields
        good = await call(client, "tools", "validate", {"name": "alpha.add", "arguments": {"a": 1, "b": 2}})
        assert good["data"] == {"valid": True, "errors": []}
        refused = await call(client, "tools", "execute", {"name": "alpha.add", "arguments": {"a": 1}})
        assert refused == {"ok": False, "cmd": "execute", "error": "params.arguments.b: is required"}


async def test_facade_errors_name_the_command_list_the_field_or_the_missing_tool(shared: Shared) -> None:
    _, gateway_server = shared
    async with Client(gateway_server.server, mode="auto", cache=None) as client:
        unknown = await call(client, "tools", "delete")
        assert unknown == {
            "ok": False,
            "cmd": "delete",
            "error": "unknown command 'delete'; valid commands: search, list, get, execute, validate",
        }
        no_cmd = envelope_of(await client.call_tool("servers", {}))
        assert no_cmd["error"] == "cmd: required string; valid commands: list, get, status"
        bad_k = await call(client, "tools", "search", {"query": "x", "k": 0})
        assert bad_k == {"ok": False, "cmd": "search", "error": "params.k: must be >= 1"}
        missing = await call(client, "tools", "get", {})
        assert missing["error"] == "params.name: is required"
        no_tool = await call(client, "tools", "get", {"name": "alpha.nope"})
        assert no_tool == {"ok": False, "cmd": "get", "error": "Tool not found: alpha.nope"}
        no_server = await call(client, "servers", "get", {"name": "gamma"})
        assert no_server["error"] == "Server not found: gamma"
        no_server_filter = await call(client, "tools", "list", {"server": "gamma"})
        assert no_server_filter["error"] == "Server not found: gamma"
        bad_detail = await call(client, "tools", "list", detail="everything")
        assert bad_detail["error"] == "detail: must be one of minimal, standard, full, got 'everything'"

        with pytest.raises(MCPError) as raised:
            await client.call_tool("alpha__echo", {"text": "not exposed in facades mode"})
        assert "Tool not found: alpha__echo" in raised.value.error.message


async def test_servers_domain_lists_gets_and_reports_status_with_health_figures(shared: Shared) -> None:
    gateway, gateway_server = shared
    async with Client(gateway_server.server, mode="auto", cache=None) as client:
        tools = upstream_tools(gateway, "beta")
        listed = await call(client, "servers", "list")
        assert listed["count"] == 2
        assert listed["data"][0] == {
            "name": "alpha",
            "status": "CONNECTED",
            "transport": "stdio",
            "toolCount": len(tools),
        }
        connected = await call(client, "servers", "list", {"status": "connected"}, detail="minimal")
        assert connected["data"] == [{"name": "alpha"}, {"name": "beta"}]

        full = await call(client, "servers", "get", {"name": "beta"}, detail="full")
        assert full["data"]["tools"] == tools and full["data"]["toolCount"] == len(tools)
        assert full["data"]["details"]["consecutiveFailures"] == 0
        assert full["data"]["details"]["protocolVersion"]

        one = await call(client, "servers", "status", {"name": "alpha"}, detail="full")
        assert one["data"] == {"name": "alpha", "state": "CONNECTED", "details": {"consecutiveFailures": 0}}
        every = await call(client, "servers", "status", detail="minimal")
        assert every["data"] == [{"name": "alpha", "state": "CONNECTED"}, {"name": "beta", "state": "CONNECTED"}]


async def test_servers_status_shows_a_disconnected_server_and_its_tools_leave_the_catalog() -> None:
    # A gateway of its own: this test disconnects one of its servers.
    async with running_gateway(two_fixtures()) as (gateway, client):
        await gateway.disconnect_server(gateway.ids["beta"])
        status = await call(client, "servers", "status", {"name": "beta"})
        assert status["data"] == {"name": "beta", "state": "DISCONNECTED"}
        beta = await call(client, "servers", "get", {"name": "beta"})
        assert beta["data"]["status"] == "DISCONNECTED" and beta["data"]["toolCount"] == 0
        listed = await call(client, "tools", "list", {"server": "beta"})
        assert listed["count"] == 0
        gone = await call(client, "tools", "execute", {"name": "beta.echo", "arguments": {"text": "x"}})
        assert gone["error"] == "Server beta is unavailable (status DISCONNECTED)"


async def test_aggregator_domain_queries_every_server_and_projects_by_detail(shared: Shared) -> None:
    _, gateway_server = shared
    async with Client(gateway_server.server, mode="auto", cache=None) as client:
        question = {"query": "How do I implement React hooks for state management?", "maxResults": 20}
        standard = await call(client, "aggregator", "query", question)
        assert standard["ok"] and standard["count"] >= 1
        first = standard["data"]["results"][0]
        assert first["rank"] == 1 and first["server"] in ("alpha", "beta")
        assert "results for How do I implement React hooks" in first["content"]
        assert standard["data"]["metadata"]["serversQueried"] == 2
        full = await call(client, "aggregator", "query", question, detail="full")
        assert full["data"]["metadata"]["serversSucceeded"] == 2 and "timestamp" in full["data"]["results"][0]
        bad = await call(client, "aggregator", "query", {"query": "x", "maxResults": 500})
        assert bad == {"ok": False, "cmd": "query", "error": "params.maxResults: must be <= 100"}
        unknown = await call(client, "aggregator", "query", {"query": "x", "servers": ["gamma"]})
        assert unknown["ok"] is False and "servers" in unknown["error"]


async def test_an_upstream_domain_runs_each_tool_as_a_command_and_answers_help(shared: Shared) -> None:
    gateway, gateway_server = shared
    async with Client(gateway_server.server, mode="auto", cache=None) as client:
        added = await call(client, "alpha", "ADD", {"a": 1, "b": 2})
        assert added == {"ok": True, "cmd": "ADD", "data": {"total": 3}}
        created = await call(client, "beta", "api.v2.create", {"title": "t"})
        assert created["data"] == "created t"
        failed = await call(client, "alpha", "fail", {"message": "no"})
        assert failed == {"ok": False, "cmd": "fail", "error": "Error executing tool fail"}
        bad = await call(client, "alpha", "add", {"a": 1})
        assert bad["error"] == "params.b: is required"
        helped = await call(client, "beta", "help", detail="minimal")
        assert [c["name"] for c in helped["data"]] == upstream_tools(gateway, "beta")
        schema = await call(client, "beta", "help", {"command": "echo"}, detail="full")
        assert schema["data"][0]["inputSchema"]["required"] == ["text"]
        unknown = await call(client, "beta", "nope")
        valid = "echo, add, blob, pid, instance, search"
        assert unknown["error"].startswith(f"unknown command 'nope'; valid commands: {valid}")


async def test_files_domain_roundtrips_inside_the_workspace_root(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# notes\n", encoding="utf-8")
    settings = settings_for(stdio_fixture("alpha"), exposure="facades", workspace_roots=[str(tmp_path)])
    async with running_gateway(settings) as (_gateway, client):
        started = await call(client, "files", "roundtrip_start", {"paths": ["notes.md", "new.md"]})
        assert started["count"] == 2
        manifest = started["data"]["manifestId"]
        assert started["data"]["files"][0]["content"] == "# notes\n"
        changes = [{"path": "notes.md", "content": "# notes\nmore\n"}, {"path": "new.md", "content": "hi\n"}]
        preview = await call(client, "files", "roundtrip_preview", {"manifestId": manifest, "changes": changes})
        assert [f["action"] for f in preview["data"]["files"]] == ["update", "create"]
        assert "+more" in preview["data"]["files"][0]["diff"]
        committed = await call(client, "files", "roundtrip_commit", {"manifestId": manifest, "changes": changes})
        assert committed["count"] == 2
        assert (tmp_path / "new.md").read_text(encoding="utf-8") == "hi\n"
        escape = await call(client, "files", "roundtrip_start", {"paths": ["../outside.md"]})
        assert escape == {"ok": False, "cmd": "roundtrip_start", "error": "../outside.md: '..' is not allowed in paths"}


async def test_a_client_finds_inspects_and_runs_an_npm_upstream_tool_through_the_facades(tmp_path: Path) -> None:
    settings = settings_for(
        stdio_fixture("alpha"),
        npm_server(
            "memory", "mcp-server-memory", env={"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")}, sandbox=writes(tmp_path)
        ),
        exposure="facades",
    )
    async with running_gateway(settings) as (gateway, client):
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names[:4] == ["mcp__proxy__aggregator__query", "tools", "servers", "aggregator"]
        await indexed(gateway)

        found = await call(client, "tools", "search", {"query": "create entities in the knowledge graph", "k": 3})
        assert found["data"][0]["name"] == "memory.create_entities"
        tool = await call(client, "tools", "get", {"name": found["data"][0]["name"]}, detail="full")
        assert tool["data"]["inputSchema"]["required"] == ["entities"]

        entities = [{"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}]
        created = await call(
            client, "tools", "execute", {"name": "memory.create_entities", "arguments": {"entities": entities}}
        )
        assert created["ok"], created
        nodes = await call(client, "tools", "search", {"query": "search nodes by query", "server": "memory", "k": 1})
        searched = await call(
            client, "tools", "execute", {"name": nodes["data"][0]["name"], "arguments": {"query": "Ada"}}
        )
        assert searched["ok"] and "wrote programs" in json.dumps(searched["data"])

        via_domain = await call(client, "memory", "open_nodes", {"names": ["Ada"]})
        assert "wrote programs" in json.dumps(via_domain["data"])

        fixture = await call(client, "tools", "search", {"query": "echo the text back", "k": 1})
        echo = await call(client, "tools", "get", {"name": fixture["data"][0]["name"]}, detail="full")
        assert echo["data"]["inputSchema"]["required"] == ["text"]
        ran = await call(client, "tools", "execute", {"name": echo["data"]["name"], "arguments": {"text": "e2e"}})
        assert ran == {"ok": True, "cmd": "execute", "data": "e2e"}
