"""The domains served by a real low-level MCP server and called through a real MCP client."""

import json
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client

from mcp_aggregator.facades import (
    RoundtripStore,
    build_aggregator_domain,
    build_files_domain,
    build_servers_domain,
    build_tools_domain,
)

from .conftest import FakeCatalog, FakeRunner, FakeServers, serve_domains


def envelope_of(result: types.CallToolResult) -> dict[str, Any]:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    envelope: dict[str, Any] = json.loads(block.text)
    assert result.is_error is (not envelope["ok"])
    return envelope


async def test_a_client_sees_one_small_tool_per_domain_and_can_drive_each(
    catalog: FakeCatalog, servers: FakeServers, runner: FakeRunner, tmp_path: Path
) -> None:
    (tmp_path / "notes.md").write_text("# notes\n")
    server = serve_domains(
        [
            build_tools_domain(catalog),
            build_servers_domain(servers),
            build_aggregator_domain(runner),
            build_files_domain(RoundtripStore([tmp_path], new_id=lambda: "m1")),
        ]
    )
    async with Client(server, cache=None) as client:
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == ["tools", "servers", "aggregator", "files"]
        wire = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools])
        assert len(wire) < 4000

        found = envelope_of(await client.call_tool("tools", {"cmd": "Search", "params": {"query": "commit log"}}))
        assert (found["cmd"], found["count"], found["data"][0]["name"]) == ("Search", 1, "git__git_log")

        ran = envelope_of(await client.call_tool("tools", {"cmd": "execute", "params": {"name": "git__git_log"}}))
        assert ran == {"ok": True, "cmd": "execute", "data": "git_log ran with {}"}

        failed = envelope_of(await client.call_tool("tools", {"cmd": "execute", "params": {"name": "flaky__fail"}}))
        assert failed == {"ok": False, "cmd": "execute", "error": "disk full"}

        unknown = envelope_of(await client.call_tool("servers", {"cmd": "restart"}))
        assert unknown["error"] == "unknown command 'restart'; valid commands: list, get, status"

        status = envelope_of(await client.call_tool("servers", {"cmd": "status", "detail": "minimal"}))
        assert status["count"] == 2

        query = envelope_of(await client.call_tool("aggregator", {"cmd": "query", "params": {"query": "hooks"}}))
        assert query["count"] == 2

        started = envelope_of(
            await client.call_tool("files", {"cmd": "roundtrip_start", "params": {"paths": ["notes.md"]}})
        )
        assert started["data"]["manifestId"] == "m1"
        committed = envelope_of(
            await client.call_tool(
                "files",
                {
                    "cmd": "roundtrip_commit",
                    "params": {"manifestId": "m1", "changes": [{"path": "notes.md", "content": "# done\n"}]},
                },
            )
        )
        assert committed["count"] == 1
    assert (tmp_path / "notes.md").read_text() == "# done\n"


async def test_bad_input_through_the_client_is_an_envelope_not_a_protocol_error(catalog: FakeCatalog) -> None:
    async with Client(serve_domains([build_tools_domain(catalog)]), cache=None) as client:
        bad_detail = envelope_of(await client.call_tool("tools", {"cmd": "list", "detail": "all"}))
        assert bad_detail == {
            "ok": False,
            "cmd": "list",
            "error": "detail: must be one of minimal, standard, full, got 'all'",
        }
        bad_params = envelope_of(await client.call_tool("tools", {"cmd": "get", "params": "docs__search"}))
        assert bad_params["error"] == "params: must be an object, got str"
        no_cmd = envelope_of(await client.call_tool("tools", {}))
        assert no_cmd["error"] == "cmd: required string; valid commands: search, list, get, execute, validate"
