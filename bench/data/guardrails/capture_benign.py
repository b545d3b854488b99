"""Capture real results of the demo's servers (and the filesystem reference server) for the
benign corpus of ``bench/guardrails_bench.py``; run once, the output is kept in the repo.

    PATH=.venv/bin:upstreams/node_modules/.bin:$PATH .venv/bin/python bench/data/guardrails/capture_benign.py REPO

``REPO``: a git checkout for ``mcp-server-git`` and ``mcp-server-filesystem`` to read (its
``docs`` folder). Writes ``benign/results.jsonl``: one ``{server, tool, result}`` a line, the
result as the wire carries it. ``get-env`` of server-everything is left out: it answers the
capturing machine's environment.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import orjson
from mcp import Client, StdioServerParameters

OUT = Path(__file__).parent / "benign" / "results.jsonl"


def calls(repo: str) -> list[tuple[str, list[str], dict[str, str], list[tuple[str, dict[str, Any]]]]]:
    docs = f"{repo}/docs"
    memory = [
        (
            "create_entities",
            {
                "entities": [
                    {"name": "gateway", "entityType": "service", "observations": ["routes MCP calls", "port 8000"]},
                    {"name": "registry", "entityType": "database", "observations": ["SQLite by default"]},
                ]
            },
        ),
        ("create_relations", {"relations": [{"from": "gateway", "to": "registry", "relationType": "stores in"}]}),
        ("read_graph", {}),
        ("search_nodes", {"query": "gateway"}),
        ("open_nodes", {"names": ["registry"]}),
    ]
    everything = [
        ("echo", {"message": "hello from the benchmark"}),
        ("get-sum", {"a": 17, "b": 25}),
        ("get-tiny-image", {}),
        ("get-annotated-message", {"messageType": "success", "includeImage": True}),
        ("get-resource-links", {"count": 5}),
        ("get-resource-reference", {"resourceType": "Text", "resourceId": 3}),
        ("get-structured-content", {"location": "New York"}),
        ("get-structured-content", {"location": "Chicago"}),
    ]
    git = [
        ("git_status", {"repo_path": repo}),
        ("git_log", {"repo_path": repo, "max_count": 40}),
        ("git_branch", {"repo_path": repo, "branch_type": "local"}),
        *[("git_show", {"repo_path": repo, "revision": f"HEAD~{n}"}) for n in range(0, 30, 3)],
    ]
    time = [
        ("get_current_time", {"timezone": "Europe/Berlin"}),
        ("get_current_time", {"timezone": "Asia/Tokyo"}),
        ("convert_time", {"source_timezone": "America/New_York", "time": "16:30", "target_timezone": "Asia/Kolkata"}),
    ]
    files = [
        ("list_directory", {"path": docs}),
        ("list_directory_with_sizes", {"path": docs}),
        ("directory_tree", {"path": docs}),
        ("get_file_info", {"path": f"{docs}/configuration.md"}),
        ("search_files", {"path": docs, "pattern": "*.md"}),
        *[("read_text_file", {"path": str(p), "head": 60}) for p in sorted(Path(docs).glob("*.md"))[:12]],
    ]
    with_memory = {"MEMORY_FILE_PATH": str(Path(tempfile.mkdtemp()) / "memory.jsonl")}
    return [
        ("mcp-server-time", ["--local-timezone", "UTC"], {}, time),
        ("mcp-server-git", ["--repository", repo], {}, git),
        ("mcp-server-memory", [], with_memory, memory),
        ("mcp-server-everything", ["stdio"], {}, everything),
        ("mcp-server-filesystem", [docs], {}, files),
    ]


async def main(repo: str) -> None:
    lines: list[bytes] = []
    for command, args, env, todo in calls(repo):
        params = StdioServerParameters(command=command, args=args, env=env or None)
        async with Client(params, mode="auto", cache=None) as client:
            for tool, arguments in todo:
                result = await client.call_tool(tool, arguments)
                wire = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                lines.append(orjson.dumps({"server": command, "tool": tool, "result": wire}))
    OUT.write_bytes(b"\n".join(lines) + b"\n")
    print(f"{len(lines)} results written to {OUT}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
