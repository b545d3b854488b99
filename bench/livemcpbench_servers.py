"""The 70 LiveMCPBench servers (527 tools) as real MCP servers, for token and search benchmarks.

Each server lists its tools with their original names, descriptions and input schemas
(byte for byte what the benchmark recorded) and answers every call with a small
deterministic text. Data: ``bench/data/livemcpbench/tools.json`` (LiveMCPBench, Apache-2.0).

Usage::

    python bench/livemcpbench_servers.py --list              # sanitised and original names
    python bench/livemcpbench_servers.py --server time-mcp-server   # serve one on stdio

A harness that wants all of them starts one process per name printed by ``--list``.
"""

from __future__ import annotations

import argparse
import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

DATA = Path(__file__).resolve().parent / "data" / "livemcpbench" / "tools.json"
_NOT_NAME = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class ServerEntry:
    """One catalogue server: ``name`` matches ``^[a-z][a-z0-9_-]*$``; ``original_name`` is the
    benchmark's own (what ``gold_servers`` in the queries refers to)."""

    name: str
    original_name: str
    description: str
    category: str
    tools: tuple[types.Tool, ...]


def sanitise_name(original: str) -> str:
    """Deterministic: ASCII-fold, lower-case, runs of other characters become ``-``; a name
    that would not start with a letter gets an ``mcp-`` prefix."""
    folded = unicodedata.normalize("NFKD", original).encode("ascii", "ignore").decode("ascii")
    name = _NOT_NAME.sub("-", folded.lower()).strip("-")
    if not name:
        return "mcp"
    return name if name[0].isalpha() else f"mcp-{name}"


def load_catalogue(path: Path = DATA) -> list[ServerEntry]:
    """Every server in file order; a sanitised name already taken gets ``-2``, ``-3``, ..."""
    raw: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    entries: list[ServerEntry] = []
    taken: set[str] = set()
    for record in raw:
        base = sanitise_name(record["name"])
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        tools = tuple(
            types.Tool(name=tool["name"], description=tool.get("description"), input_schema=tool["inputSchema"])
            for group in record["tools"].values()
            for tool in group["tools"]
        )
        entries.append(
            ServerEntry(name, record["name"], record.get("description") or "", record.get("category") or "", tools)
        )
    return entries


def call_text(entry: ServerEntry, tool: str, arguments: dict[str, Any] | None) -> str:
    """The deterministic answer to a call: which tool ran with which arguments."""
    args = json.dumps(arguments or {}, sort_keys=True, ensure_ascii=False)
    return f"{entry.name}.{tool} ok: {args}"


def build_server(entry: ServerEntry) -> Server[Any]:
    by_name = {tool.name: tool for tool in entry.tools}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(entry.tools))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in by_name:
            text = f"unknown tool {params.name!r}"
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        text = call_text(entry, params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return Server(entry.name, description=entry.description or None, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--server", help="sanitised name of the server to serve on stdio")
    group.add_argument("--list", action="store_true", help="print 'name<TAB>tools<TAB>original name' lines")
    args = parser.parse_args()
    catalogue = load_catalogue()
    if args.list:
        for entry in catalogue:
            print(f"{entry.name}\t{len(entry.tools)}\t{entry.original_name}")
        return
    by_name = {entry.name: entry for entry in catalogue}
    if args.server not in by_name:
        parser.error(f"unknown server {args.server!r}; see --list")
    anyio.run(serve_stdio, build_server(by_name[args.server]))


if __name__ == "__main__":
    main()
