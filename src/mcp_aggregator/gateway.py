"""The composition root: owns the task group, the upstream supervisors and the catalog."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from enum import StrEnum
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from anyio.abc import TaskGroup

from mcp_aggregator.catalog import Catalog, Route
from mcp_aggregator.errors import ServerExistsError, ServerNotFoundError, ServerUnavailableError
from mcp_aggregator.health.server_state import ServerStatus, is_exposed
from mcp_aggregator.settings import ServerConfig, Settings
from mcp_aggregator.upstreams.connection import ProgressRelay
from mcp_aggregator.upstreams.server_supervisor import RetryPolicy, ServerSupervisor, Sleeper

logger = logging.getLogger(__name__)

ChangeListener = Callable[[], None]


class GatewayState(StrEnum):
    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


class Gateway:
    """One gateway; ``async with Gateway(settings) as gw`` starts every upstream concurrently.

    Entering never waits for upstreams: a slow or broken one is reported by its
    supervisor and never blocks the others or the start. ``wait_settled`` waits for
    each server's first connection attempt when a caller wants that.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        env: Mapping[str, str] | None = None,
        sleep: Sleeper = anyio.sleep,
    ) -> None:
        self.settings = settings
        self.state = GatewayState.NEW
        self.supervisors: dict[str, ServerSupervisor] = {}
        self._env = dict(os.environ) if env is None else dict(env)
        self._sleep = sleep
        self._retry = RetryPolicy(
            max_attempts=int(settings.health.get("reconnect_max_attempts", 5)),
            base_secs=float(settings.health.get("reconnect_backoff_base_secs", 1.0)),
        )
        self._catalog: Catalog | None = None
        self._listeners: list[ChangeListener] = []
        self._settled: dict[str, anyio.Event] = {}
        self._tg: TaskGroup | None = None
        self._stack: AsyncExitStack | None = None
        self._exposed_snapshot: tuple[tuple[str, str], ...] = ()

    async def __aenter__(self) -> Self:
        if self.state is not GatewayState.NEW:
            raise RuntimeError("a Gateway can be entered only once")
        async with AsyncExitStack() as stack:
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(self._tg.cancel_scope.cancel)
            for config in self.settings.servers:
                await self._start_supervisor(config, connect=config.enabled)
            self._stack = stack.pop_all()
        self.state = GatewayState.RUNNING
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self.state = GatewayState.CLOSED
        assert self._stack is not None
        return await self._stack.__aexit__(exc_type, exc, tb)

    async def _start_supervisor(self, config: ServerConfig, *, connect: bool) -> ServerSupervisor:
        assert self._tg is not None
        supervisor = ServerSupervisor(
            config, env=self._env, retry=self._retry, sleep=self._sleep, on_change=self._supervisor_changed
        )
        self.supervisors[config.name] = supervisor
        self._settled[config.name] = anyio.Event()
        await self._tg.start(supervisor.run)
        if connect:
            supervisor.request_connect()
        else:
            self._settled[config.name].set()
        self._invalidate()
        return supervisor

    def _supervisor_changed(self, supervisor: ServerSupervisor) -> None:
        if supervisor.status in (ServerStatus.CONNECTED, ServerStatus.ERROR):
            self._settled[supervisor.name].set()
        self._invalidate()

    def _invalidate(self) -> None:
        self._catalog = None
        snapshot = self._exposure_key()
        if snapshot != self._exposed_snapshot:
            self._exposed_snapshot = snapshot
            for listener in list(self._listeners):
                listener()

    def _exposure_key(self) -> tuple[tuple[str, str], ...]:
        key: list[tuple[str, str]] = []
        for name in sorted(self.supervisors):
            sup = self.supervisors[name]
            if is_exposed(sup.status) and sup.connection is not None:
                key.extend((name, tool.model_dump_json()) for tool in sup.connection.tools)
        return tuple(key)

    def on_change(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener`` whenever the set of exposed tools changes; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def wait_settled(self, timeout: float) -> None:
        """Wait (up to ``timeout``) until every server's first connection attempt resolved."""
        with anyio.move_on_after(timeout):
            for event in list(self._settled.values()):
                await event.wait()

    @property
    def catalog(self) -> Catalog:
        """The tools of CONNECTED and DEGRADED servers; rebuilt only after a change."""
        if self._catalog is None:
            tools: dict[str, tuple[types.Tool, ...]] = {}
            for name, sup in self.supervisors.items():
                if is_exposed(sup.status) and sup.connection is not None:
                    tools[name] = sup.connection.tools
            serve = self.settings.serve
            self._catalog = Catalog.build(
                tools, separator=serve.name_separator, max_length=serve.max_name_length,
                known_servers=self.supervisors,
            )
        return self._catalog

    def supervisor(self, name: str) -> ServerSupervisor:
        try:
            return self.supervisors[name]
        except KeyError:
            raise ServerNotFoundError(name) from None

    def resolve(self, name: str, server: str | None = None) -> Route:
        """Route a tool name; a server that exists but is not serving gives a 503-style error."""
        if server is not None and server in self.supervisors:
            sup = self.supervisors[server]
            if not is_exposed(sup.status):
                raise ServerUnavailableError(server, sup.status.value, sup.error_message)
        return self.catalog.resolve_route(name, server)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        server: str | None = None,
        progress: ProgressRelay | None = None,
        meta: types.RequestParamsMeta | None = None,
    ) -> types.CallToolResult:
        """Route and forward one ``tools/call``; upstream failures raise ``UpstreamError``s."""
        route = self.resolve(name, server)
        connection = self.supervisor(route.server).require_connection()
        return await connection.call_tool(route.tool, arguments, progress=progress, meta=meta)

    async def add_server(self, config: ServerConfig, *, connect: bool = True) -> ServerSupervisor:
        if config.name in self.supervisors:
            raise ServerExistsError(config.name)
        return await self._start_supervisor(config, connect=connect)

    async def remove_server(self, name: str) -> None:
        supervisor = self.supervisor(name)
        await supervisor.stop()
        del self.supervisors[name]
        self._settled.pop(name, None)
        self._invalidate()
