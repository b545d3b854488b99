"""What an MCP client sees as tools: a surface lists definitions and handles calls to them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

import anyio
import mcp_types as types
from anyio.abc import TaskStatus

from mcp_aggregator.errors import AggregatorError, ToolNotFoundError
from mcp_aggregator.relay import NO_CALLER, Caller
from mcp_aggregator.serve.serve_gateway import ServeGateway


@dataclass(frozen=True)
class CallRequest:
    """A ``tools/call`` beyond its name and arguments: who asks, and a retry's answers."""

    caller: Caller = NO_CALLER
    meta: types.RequestParamsMeta | None = None
    input_responses: types.InputResponses | None = None
    request_state: str | None = None


ResultT = TypeVar("ResultT", bound=types.Result)
ToolHandler = Callable[[dict[str, Any], CallRequest], Awaitable[types.CallToolResult | types.InputRequiredResult]]


class ToolSurface(Protocol):
    def list_tools(self) -> Sequence[types.Tool]:
        """Definitions in a stable order with stable text."""
        ...

    def handler(self, name: str) -> ToolHandler | None:
        """The handler for ``name``, or None if this surface does not own it."""
        ...


@runtime_checkable
class RefreshingSurface(Protocol):
    """A surface whose list changes on its own (not with the catalogue): it runs beside the
    server and calls ``changed`` when clients should list again."""

    async def run(
        self, changed: Callable[[], None], *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None: ...


@dataclass
class PassthroughSurface:
    """Every upstream tool under its exposed name, definition otherwise untouched."""

    gateway: ServeGateway
    _listed: tuple[object, tuple[types.Tool, ...]] = field(default=(None, ()), repr=False)

    def list_tools(self) -> Sequence[types.Tool]:
        catalog = self.gateway.catalog
        if self._listed[0] is not catalog:
            # Made once per catalogue version, not per tools/list (a client may list often).
            tools = tuple(entry.tool.model_copy(update={"name": entry.exposed}) for entry in catalog.entries)
            self._listed = (catalog, tools)
        return self._listed[1]

    def handler(self, name: str) -> ToolHandler | None:
        """By exposed or canonical name, else the upstream's own name when one server has it.

        A name the gateway knows but cannot serve now (its server is reconnecting, several
        servers share it) gets a handler that raises that error, not "Tool not found".
        """
        entry = self.gateway.catalog.get(name)
        if entry is not None:
            canonical = entry.canonical
        else:
            try:
                route = self.gateway.resolve(name)
            except ToolNotFoundError:
                return None
            except AggregatorError as exc:
                return _failing(exc)
            canonical = route.entry.canonical if route.entry is not None else name

        async def call(
            arguments: dict[str, Any], request: CallRequest
        ) -> types.CallToolResult | types.InputRequiredResult:
            result = await self.gateway.pipeline.call_tool(
                canonical,
                arguments,
                caller=request.caller,
                meta=request.meta,
                input_responses=request.input_responses,
                request_state=request.request_state,
            )
            return without_protocol_meta(result) if isinstance(result, types.CallToolResult) else result

        return call


def _failing(error: AggregatorError) -> ToolHandler:
    async def call(arguments: dict[str, Any], request: CallRequest) -> types.CallToolResult:
        raise error

    return call


def without_protocol_meta(result: ResultT) -> ResultT:
    """Drop the upstream's protocol-reserved ``_meta`` keys (its serverInfo stamp, ...).

    They describe the upstream connection, not ours; the SDK stamps our own (and keeps one
    it finds, which would show the client the upstream's name instead of the gateway's).
    """
    if not result.meta:
        return result
    return result.model_copy(update={"meta": protocol_free(result.meta) or None})


def protocol_free(meta: Mapping[str, Any]) -> dict[str, Any]:
    """``meta`` without the protocol-reserved (``io.modelcontextprotocol/``) keys."""
    return {k: v for k, v in meta.items() if not k.startswith("io.modelcontextprotocol/")}


@dataclass
class StaticSurface:
    """A fixed set of tools with their handlers (the aggregator query, the facades)."""

    tools: Sequence[tuple[types.Tool, ToolHandler]]

    def list_tools(self) -> Sequence[types.Tool]:
        return [tool for tool, _ in self.tools]

    def handler(self, name: str) -> ToolHandler | None:
        for tool, handler in self.tools:
            if tool.name == name:
                return handler
        return None


@dataclass
class CombinedSurface:
    """Several surfaces in order; the first that owns a name handles it."""

    surfaces: Sequence[ToolSurface]

    def list_tools(self) -> Sequence[types.Tool]:
        seen: set[str] = set()
        out: list[types.Tool] = []
        for surface in self.surfaces:
            for tool in surface.list_tools():
                if tool.name not in seen:
                    seen.add(tool.name)
                    out.append(tool)
        return out

    def handler(self, name: str) -> ToolHandler | None:
        for surface in self.surfaces:
            if (found := surface.handler(name)) is not None:
                return found
        return None

    async def run(
        self, changed: Callable[[], None], *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The background work of the surfaces that refresh on their own."""
        async with anyio.create_task_group() as tg:
            for surface in self.surfaces:
                if isinstance(surface, RefreshingSurface):
                    await tg.start(surface.run, changed)
            task_status.started()
