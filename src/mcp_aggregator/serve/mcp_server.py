"""The MCP server LLM clients talk to (stdio or streamable HTTP), built on the SDK's server."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_aggregator import __version__
from mcp_aggregator.catalog import exposed_name
from mcp_aggregator.errors import AggregatorError, ToolNotFoundError, UpstreamError
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.health.server_state import is_exposed
from mcp_aggregator.serve.error_mapping import to_mcp_error
from mcp_aggregator.serve.tool_surface import ToolSurface
from mcp_aggregator.settings import Exposure
from mcp_aggregator.upstreams.connection import ProgressRelay, UpstreamConnection

logger = logging.getLogger(__name__)

_INSTRUCTIONS = {
    Exposure.PASSTHROUGH: (
        "mcp-aggregator federates several MCP servers; each tool is named <server>__<tool>. "
        "mcp__proxy__aggregator__query asks several servers one question at once."
    ),
    Exposure.FACADES: (
        "mcp-aggregator federates several MCP servers behind a few tools. To use an upstream "
        "tool: 'tools' {cmd: search}, then {cmd: get, detail: full} for its schema, then "
        "{cmd: execute}. 'servers' shows their state; per-server tools take the tool name as cmd."
    ),
    Exposure.SEARCH: (
        "mcp-aggregator federates several MCP servers. Find a tool with 'tools' {cmd: search}, "
        "read its schema with {cmd: get, detail: full}, run it with {cmd: execute}."
    ),
}


class GatewayServer:
    """Adapts a ``Gateway`` and a ``ToolSurface`` to the SDK's low-level ``Server``."""

    def __init__(self, gateway: Gateway, surface: ToolSurface, *, name: str = "mcp-aggregator") -> None:
        self.gateway = gateway
        self.surface = surface
        self.bus = InMemorySubscriptionBus()
        self._legacy_connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._changed = anyio.Event()
        self.server: Server[Any] = Server(
            name,
            version=__version__,
            instructions=_INSTRUCTIONS[gateway.settings.serve.exposure],
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_subscriptions_listen=ListenHandler(self.bus),
        )
        self._unsubscribe: Callable[[], None] = gateway.on_change(self._changed.set)

    def _remember(self, ctx: ServerRequestContext[Any]) -> None:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        # Handlers get a per-request ServerSession; list-changed notifications must go to
        # the connection it wraps, which lives as long as the client stays connected.
        connection = getattr(ctx.session, "_connection", None)
        if isinstance(connection, Connection):
            self._legacy_connections.add(connection)

    async def run_notifier(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Tell connected clients when the tool list changed (both protocol eras)."""
        task_status.started()
        try:
            while True:
                await self._changed.wait()
                self._changed = anyio.Event()
                await self.bus.publish(ToolsListChanged())
                for connection in list(self._legacy_connections):
                    try:
                        await connection.send_tool_list_changed()
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError, MCPError):
                        self._legacy_connections.discard(connection)
        finally:
            self._unsubscribe()

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._remember(ctx)
        # A client usually lists tools once at start: give upstreams that are still
        # connecting a bounded chance to appear, instead of answering with a partial list.
        await self.gateway.wait_settled(self.gateway.settings.serve.list_wait_secs)
        return types.ListToolsResult(tools=list(self.surface.list_tools()))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self._remember(ctx)
        handler = self.surface.handler(params.name)
        if handler is None:
            raise to_mcp_error(ToolNotFoundError(params.name))

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(progress, total, message)

        relay_fn: ProgressRelay = relay
        try:
            return await handler(dict(params.arguments or {}), relay_fn)
        except AggregatorError as exc:
            if isinstance(exc, UpstreamError):
                logger.warning("tools/call %s failed: %s", params.name, exc)
            raise to_mcp_error(exc) from exc

    def _exposed_connections(self, capability: str) -> list[UpstreamConnection]:
        out = []
        for name in sorted(self.gateway.supervisors):
            sup = self.gateway.supervisors[name]
            conn = sup.connection
            if conn is None or not is_exposed(sup.status) or conn.capabilities is None:
                continue
            if getattr(conn.capabilities, capability) is not None:
                out.append(conn)
        return out

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resources: list[types.Resource] = []
        for conn in self._exposed_connections("resources"):
            try:
                result = await conn.request("resources/list", lambda c: c.list_resources(), timeout_secs=10)
            except UpstreamError as exc:
                logger.warning("resources/list on %s failed: %s", conn.name, exc)
                continue
            for res in result.resources:
                resources.append(res.model_copy(update={"uri": _resource_uri(conn.name, str(res.uri))}))
        return types.ListResourcesResult(resources=resources)

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        server, uri = _split_resource_uri(str(params.uri))
        try:
            conn = self.gateway.supervisor(server).require_connection()
            result: types.ReadResourceResult = await conn.request(
                f"reading resource {uri}", lambda c: c.read_resource(uri)
            )
        except AggregatorError as exc:
            raise to_mcp_error(exc) from exc
        contents = [c.model_copy(update={"uri": str(params.uri)}) for c in result.contents]
        return types.ReadResourceResult(contents=contents)

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        prompts: list[types.Prompt] = []
        serve = self.gateway.settings.serve
        for conn in self._exposed_connections("prompts"):
            try:
                result = await conn.request("prompts/list", lambda c: c.list_prompts(), timeout_secs=10)
            except UpstreamError as exc:
                logger.warning("prompts/list on %s failed: %s", conn.name, exc)
                continue
            for prompt in result.prompts:
                name = exposed_name(
                    conn.name, prompt.name, separator=serve.name_separator, max_length=serve.max_name_length
                )
                prompts.append(prompt.model_copy(update={"name": name}))
        return types.ListPromptsResult(prompts=prompts)

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        serve = self.gateway.settings.serve
        for conn in self._exposed_connections("prompts"):
            prefix = f"{conn.name}{serve.name_separator}"
            if params.name.startswith(prefix):
                original = params.name[len(prefix) :]
                arguments = params.arguments
                try:
                    result: types.GetPromptResult = await conn.request(
                        f"getting prompt {original}",
                        lambda c, name=original, args=arguments: c.get_prompt(name, args),  # type: ignore[misc]
                    )
                except AggregatorError as exc:
                    raise to_mcp_error(exc) from exc
                return result
        raise MCPError(INVALID_PARAMS, f"Prompt not found: {params.name}")


_RESOURCE_SCHEME = "aggregator+"


def _resource_uri(server: str, uri: str) -> str:
    """Namespace a resource URI so two upstreams' ``file:///a`` never collide."""
    return f"{_RESOURCE_SCHEME}{server}:{uri}"


def _split_resource_uri(uri: str) -> tuple[str, str]:
    if not uri.startswith(_RESOURCE_SCHEME) or ":" not in uri[len(_RESOURCE_SCHEME):]:
        raise MCPError(INVALID_PARAMS, f"Resource not found: {uri}")
    server, _, original = uri[len(_RESOURCE_SCHEME):].partition(":")
    return server, original

