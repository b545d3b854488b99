"""A v0.1 MCP Registry the tests start on 127.0.0.1, serving real ``server.json`` entries.

It answers as the official OpenAPI describes: ``GET /v0.1/servers`` (``search``,
``cursor``, ``limit``, ``updated_since``, ``version=latest``) with ``metadata.nextCursor``,
and ``GET /v0.1/servers/{name}/versions/{version|latest}``; each item is
``{"server": ..., "_meta": {"io.modelcontextprotocol.registry/official": ...}}``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp_aggregator.serve.runner import bind_socket

REPO = Path(__file__).resolve().parents[2]
OFFICIAL = "io.modelcontextprotocol.registry/official"
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def memory_version() -> str:
    package = REPO / "upstreams/node_modules/@modelcontextprotocol/server-memory/package.json"
    return str(json.loads(package.read_text())["version"])


def time_version() -> str:
    return version("mcp-server-time")


def item(server: dict[str, Any], *, status: str = "active", latest: bool = True, updated: int = 0) -> dict[str, Any]:
    """A v0.1 item; ``updated`` is minutes after ``T0``."""
    when = (T0 + timedelta(minutes=updated)).isoformat().replace("+00:00", "Z")
    meta = {"status": status, "publishedAt": when, "updatedAt": when, "isLatest": latest}
    return {"server": server, "_meta": {OFFICIAL: meta}}


def npm_memory(name: str = "io.github.modelcontextprotocol/server-memory", **extra: Any) -> dict[str, Any]:
    package: dict[str, Any] = {
        "registryType": "npm",
        "identifier": "@modelcontextprotocol/server-memory",
        "version": memory_version(),
        "transport": {"type": "stdio"},
        "environmentVariables": [
            {"name": "MEMORY_FILE_PATH", "description": "Where the knowledge graph is kept"},
        ],
    }
    package.update(extra)
    return {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": name,
        "description": "Knowledge graph memory for agents",
        "version": memory_version(),
        "packages": [package],
    }


def pypi_time() -> dict[str, Any]:
    return {
        "name": "io.github.modelcontextprotocol/server-time",
        "description": "Time and timezone conversion",
        "version": time_version(),
        "packages": [
            {
                "registryType": "pypi",
                "identifier": "mcp-server-time",
                "version": time_version(),
                "transport": {"type": "stdio"},
                "packageArguments": [
                    {"type": "named", "name": "--local-timezone", "description": "IANA zone", "valueHint": "zone"}
                ],
            }
        ],
    }


def remote(url: str) -> dict[str, Any]:
    return {
        "name": "io.example/fixture-remote",
        "description": "A remote streamable HTTP server",
        "version": "1.0.0",
        "remotes": [
            {
                "type": "streamable-http",
                "url": url,
                "headers": [
                    {
                        "name": "X-Api-Key",
                        "description": "Your API key",
                        "isRequired": True,
                        "isSecret": True,
                        "value": "{api_key}",
                        "variables": {"api_key": {"isRequired": True, "isSecret": True}},
                    }
                ],
            }
        ],
    }


def with_secrets() -> dict[str, Any]:
    """npm server-memory declared with required and secret variables (it ignores them)."""
    return npm_memory(
        "io.example/memory-with-keys",
        environmentVariables=[
            {"name": "WEATHER_API_KEY", "description": "API key", "isRequired": True, "isSecret": True},
            {"name": "REGION", "isRequired": True, "choices": ["eu", "us"]},
            {"name": "UNITS", "default": "metric"},
        ],
    )


@dataclass
class LocalRegistry:
    items: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, str]] = field(default_factory=list)
    """The query parameters of every list request, in order."""
    url: str = ""
    down: bool = False
    """Answer every list request 503, as a registry in an outage."""

    def add(self, new: dict[str, Any]) -> None:
        """Add a version; a latest one makes the others of its name not latest (and updated)."""
        name = new["server"]["name"]
        if new["_meta"][OFFICIAL]["isLatest"]:
            for old in self.items:
                if old["server"]["name"] == name and old["_meta"][OFFICIAL]["isLatest"]:
                    old["_meta"][OFFICIAL]["isLatest"] = False
                    old["_meta"][OFFICIAL]["updatedAt"] = new["_meta"][OFFICIAL]["updatedAt"]
        self.items.append(new)

    async def list_servers(self, request: Request) -> JSONResponse:
        params = dict(request.query_params)
        self.requests.append(params)
        if self.down:
            return JSONResponse({"title": "Service Unavailable", "status": 503}, status_code=503)
        chosen = self.items
        if params.get("version") == "latest":
            chosen = [i for i in chosen if i["_meta"][OFFICIAL]["isLatest"]]
        if "updated_since" in params:
            since = datetime.fromisoformat(params["updated_since"].replace("Z", "+00:00"))
            chosen = [i for i in chosen if _updated(i) > since]
        if "search" in params:
            chosen = [i for i in chosen if params["search"].lower() in i["server"]["name"].lower()]
        start = int(params.get("cursor", "0"))
        limit = int(params.get("limit", "30"))
        page = chosen[start : start + limit]
        more = start + limit < len(chosen)
        metadata = {"count": len(page), **({"nextCursor": str(start + limit)} if more else {})}
        return JSONResponse({"servers": page, "metadata": metadata})

    async def get_version(self, request: Request) -> JSONResponse:
        name, version = request.path_params["name"], request.path_params["version"]
        for found in self.items:
            meta = found["_meta"][OFFICIAL]
            if found["server"]["name"] == name and (
                found["server"]["version"] == version or (version == "latest" and meta["isLatest"])
            ):
                return JSONResponse(found)
        return JSONResponse({"title": "Not Found", "status": 404, "detail": "Server not found"}, status_code=404)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v0.1/servers", self.list_servers),
                Route("/v0.1/servers/{name:path}/versions/{version}", self.get_version),
            ]
        )


def _updated(found: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(found["_meta"][OFFICIAL]["updatedAt"].replace("Z", "+00:00"))


@asynccontextmanager
async def serving(registry: LocalRegistry) -> AsyncIterator[LocalRegistry]:
    """``registry`` served on 127.0.0.1 (its ``url`` set) until the block ends."""
    server = uvicorn.Server(uvicorn.Config(registry.app(), log_level="warning", lifespan="off"))
    sock = bind_socket("127.0.0.1", 0)
    registry.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(server.serve, sockets=[sock]))
            try:
                yield registry
            finally:
                server.should_exit = True
    finally:
        sock.close()


def closed_port_url() -> str:
    """An address where nothing listens (a port bound, then released)."""
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"
