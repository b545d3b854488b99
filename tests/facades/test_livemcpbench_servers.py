"""The LiveMCPBench stand-in servers the token benchmark uses (bench/livemcpbench_servers.py)."""

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from mcp import Client

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_bench_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("livemcpbench_servers", BENCH / "livemcpbench_servers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules while the class is being built.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


servers = load_bench_module()


def test_catalogue_has_every_server_and_tool_with_safe_unique_names() -> None:
    catalogue = servers.load_catalogue()
    assert len(catalogue) == 70
    assert sum(len(entry.tools) for entry in catalogue) == 527
    names = [entry.name for entry in catalogue]
    assert len(set(names)) == 70
    assert all(re.fullmatch(r"[a-z][a-z0-9_-]*", name) for name in names)


@pytest.mark.parametrize(
    ("original", "name"),
    [
        ("Bing_CN_MCP", "bing-cn-mcp"),
        ("OP.GG MCP Server", "op-gg-mcp-server"),
        ("12306-mcp", "mcp-12306-mcp"),
        ("鸣潮 MCP Server", "mcp-server"),
        ("八字", "mcp"),
    ],
)
def test_names_are_sanitised_deterministically(original: str, name: str) -> None:
    assert servers.sanitise_name(original) == name


async def test_a_built_server_lists_the_original_schemas_and_answers_deterministically() -> None:
    raw = json.loads((BENCH / "data/livemcpbench/tools.json").read_text(encoding="utf-8"))
    entry = next(e for e in servers.load_catalogue() if e.original_name == "Time MCP Server")
    original = next(r for r in raw if r["name"] == "Time MCP Server")["tools"]["time"]["tools"]
    async with Client(servers.build_server(entry), cache=None) as client:
        listed = (await client.list_tools()).tools
        assert [(t.name, t.description, t.input_schema) for t in listed] == [
            (t["name"], t["description"], t["inputSchema"]) for t in original
        ]
        result = await client.call_tool("get_current_time", {"timezone": "UTC"})
        assert result.content[0].text == 'time-mcp-server.get_current_time ok: {"timezone": "UTC"}'  # type: ignore[union-attr]
        missing = await client.call_tool("nope", {})
        assert missing.is_error is True
