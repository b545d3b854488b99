"""The ``servers`` domain: list, get and check the status of upstream servers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from mcp_aggregator.facades.command import Command
from mcp_aggregator.facades.detail import Detail, project_server, project_status
from mcp_aggregator.facades.domain import Domain
from mcp_aggregator.facades.param_schema import object_schema
from mcp_aggregator.facades.records import ServerRecord, ServerStatus


class ServerView(Protocol):
    """What the ``servers`` domain needs from the gateway. Unknown names raise ``ServerNotFoundError``."""

    async def list(self) -> Sequence[ServerRecord]:
        """Every registered server, in a stable order."""
        ...

    async def get(self, name: str) -> ServerRecord: ...

    async def status(self, name: str) -> ServerStatus: ...


_NAME = {"type": "string", "minLength": 1}


def build_servers_domain(view: ServerView, *, name: str = "servers") -> Domain:
    async def list_(params: dict[str, Any], detail: Detail) -> Any:
        wanted = params.get("status")
        servers = await view.list()
        if wanted is not None:
            servers = [server for server in servers if server.status.lower() == wanted.lower()]
        return [project_server(server, detail) for server in servers]

    async def get(params: dict[str, Any], detail: Detail) -> Any:
        return project_server(await view.get(params["name"]), detail)

    async def status(params: dict[str, Any], detail: Detail) -> Any:
        if "name" in params:
            return project_status(await view.status(params["name"]), detail)
        return [project_status(await view.status(server.name), detail) for server in await view.list()]

    commands = [
        Command(
            "list",
            "all servers, optionally only those in one status",
            list_,
            object_schema({"status": {"type": "string"}}),
        ),
        Command(
            "get",
            "one server; detail=full adds its tools and details",
            get,
            object_schema({"name": _NAME}, required=["name"]),
        ),
        Command("status", "health of one server, or of all", status, object_schema({"name": _NAME})),
    ]
    return Domain(name, "Inspect the upstream MCP servers behind this gateway.", commands)
