"""The composition root: owns the task group, the registry, the supervisors and the indexes."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from datetime import datetime
from enum import StrEnum
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from anyio.abc import TaskGroup

from mcp_aggregator.aggregate import AggregatorEngine, parse_query_arguments
from mcp_aggregator.catalog import Catalog, Route
from mcp_aggregator.catalog.feature_catalog import FeatureCatalog, ServerFeatures
from mcp_aggregator.catalog.tool_docs import tool_docs
from mcp_aggregator.errors import (
    LimitExceededError,
    RoutingError,
    ServerNotFoundError,
    ServerUnavailableError,
    ToolNotFoundError,
)
from mcp_aggregator.health.health_monitor import Clock, HealthMonitor
from mcp_aggregator.health.health_result import HealthOutcome, HealthResult
from mcp_aggregator.health.live_health_store import LiveHealthStore, LiveServer, ServerSnapshot
from mcp_aggregator.health.server_state import ServerEvent, ServerStatus, is_exposed
from mcp_aggregator.registry import (
    Registry,
    ServerRecord,
    ServerSource,
    ToolSpec,
    check_server_limit,
    check_tool_limits,
)
from mcp_aggregator.registry.registry_mirror import RegistryMirror
from mcp_aggregator.relay import NO_CALLER, CallerBackchannel, CallPipeline, Stage, current_caller
from mcp_aggregator.relay.pipeline_target import PipelineTarget
from mcp_aggregator.search import SearchHit, SkillSpec, ToolSearch, build_tool_search
from mcp_aggregator.search.catalog_indexer import CatalogIndexer
from mcp_aggregator.search.classifier import SkillAssignment
from mcp_aggregator.search.skills import skills_of
from mcp_aggregator.settings import ServerConfig, Settings
from mcp_aggregator.settings.server_records import config_from_record, spec_from_config
from mcp_aggregator.upstreams.connection import ProgressRelay, UpstreamConnection
from mcp_aggregator.upstreams.server_supervisor import RetryPolicy, ServerSupervisor, Sleeper

logger = logging.getLogger(__name__)

ChangeListener = Callable[[], None]
ResourceListener = Callable[[str, str], Awaitable[None]]

_SHUTDOWN_GRACE_SECS = 10.0


class GatewayState(StrEnum):
    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


class Gateway:
    """One gateway; ``async with Gateway(settings) as gw`` starts every upstream concurrently.

    Entering opens the registry (running migrations), upserts the configured servers and
    starts a supervisor per registered server; it never waits for upstreams to connect.
    The live supervisors are the truth; the registry is a write-behind mirror of them.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        env: Mapping[str, str] | None = None,
        sleep: Sleeper = anyio.sleep,
        search: ToolSearch | None = None,
        health_clock: Clock | None = None,
        stages: Sequence[Stage] = (),
    ) -> None:
        self.settings = settings
        self.state = GatewayState.NEW
        self.supervisors: dict[str, ServerSupervisor] = {}
        self.ids: dict[str, str] = {}
        self.discovery_refusals: dict[str, str] = {}
        self.engine = AggregatorEngine(settings.aggregator)
        self._search = search
        self._health_clock = health_clock
        self._env = dict(os.environ) if env is None else dict(env)
        self._sleep = sleep
        health = settings.health
        self._retry = RetryPolicy(health.reconnect_max_attempts, health.reconnect_backoff_base_secs)
        self._catalog: Catalog | None = None
        self._exposed: list[str] | None = None
        self._known_tools: dict[str, tuple[types.Tool, ...]] = {}
        self._listeners: list[ChangeListener] = []
        self._settled: dict[str, anyio.Event] = {}
        self._changed = anyio.Event()
        self._mirror = RegistryMirror()
        self._indexer: CatalogIndexer | None = None
        self._tool_ids: dict[str, str] = {}
        self._tg: TaskGroup | None = None
        self._stack: AsyncExitStack | None = None
        self._registry: Registry | None = None
        self._exposed_snapshot: tuple[tuple[str, int], ...] = ()
        self._discoveries: dict[str, int] = {}
        self._known_features: dict[str, ServerFeatures] = {}
        self._features: FeatureCatalog | None = None
        self._resource_listeners: list[ResourceListener] = []
        self.backchannel = CallerBackchannel(on_resource_updated=self._resource_updated)
        self.pipeline = CallPipeline(self, stages)

    async def __aenter__(self) -> Self:
        if self.state is not GatewayState.NEW:
            raise RuntimeError("a Gateway can be entered only once")
        async with AsyncExitStack() as stack:
            stack.callback(self._mirror.close)
            self._registry = await stack.enter_async_context(Registry(self.settings.registry))
            if self._search is None:
                self._search = build_tool_search(self.settings.search)
            stack.callback(self._search.close)
            await self._registry.reset_after_restart()
            await self._registry.upsert_config_servers([spec_from_config(c) for c in self.settings.servers])
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(self._tg.cancel_scope.cancel)
            await self._tg.start(self._mirror.run)
            self._indexer = CatalogIndexer(
                self.settings.search, self._search, on_classified=self._classified, on_indexed=self._poke
            )
            await self._indexer.start(self._tg)
            await self._tg.start(self._health_monitor().run)
            configured = {c.name: c for c in self.settings.servers}
            for record in await self._registry.list_servers():
                config = configured.get(record.name) or config_from_record(record)
                await self._start_supervisor(record.id, config, connect=config.enabled)
            self._stack = stack.pop_all()
        self.state = GatewayState.RUNNING
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self.state = GatewayState.CLOSED
        assert self._stack is not None
        # Close the sessions and let the registry mirror finish its writes before the task
        # group is cancelled: a database write cancelled half-way leaves the driver's
        # clean-up running past the event loop's end.
        with anyio.move_on_after(_SHUTDOWN_GRACE_SECS, shield=True):
            for supervisor in list(self.supervisors.values()):
                await supervisor.stop()
            await self._mirror.flush()
        return await self._stack.__aexit__(exc_type, exc, tb)

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            raise RuntimeError("the gateway is not running")
        return self._registry

    @property
    def indexer(self) -> CatalogIndexer:
        if self._indexer is None:
            raise RuntimeError("the gateway is not running")
        return self._indexer

    @property
    def search(self) -> ToolSearch:
        if self._search is None:
            raise RuntimeError("the gateway is not running")
        return self._search

    async def flush(self) -> None:
        """Wait until every state change so far is written to the registry."""
        await self._mirror.flush()

    # -- supervisors ---------------------------------------------------------------

    async def _start_supervisor(self, server_id: str, config: ServerConfig, *, connect: bool) -> ServerSupervisor:
        assert self._tg is not None
        supervisor = ServerSupervisor(
            config,
            env=self._env,
            retry=self._retry,
            sleep=self._sleep,
            on_change=self._supervisor_changed,
            on_activity=self._poke,
            backchannel=self.backchannel,
        )
        self.supervisors[config.name] = supervisor
        self.ids[config.name] = server_id
        self._settled[config.name] = anyio.Event()
        await self._tg.start(supervisor.run)
        if connect:
            supervisor.request_connect()
        else:
            self._settled[config.name].set()
        self._invalidate()
        return supervisor

    def _supervisor_changed(self, sup: ServerSupervisor, event: ServerEvent | None, persist: bool) -> None:
        server_id = self.ids.get(sup.name)
        if server_id is None:
            return
        if sup.status in (ServerStatus.CONNECTED, ServerStatus.ERROR):
            self._settled[sup.name].set()
        if event is not None and persist:
            error = sup.error_message
            self._mirror.submit(
                f"{sup.name}: {event.value}",
                lambda: self.registry.apply_event(server_id, event, error_message=error),
            )
        if (event is None or event is ServerEvent.CONNECT_OK) and sup.connection is not None:
            conn = sup.connection
            self._known_features[sup.name] = ServerFeatures(conn.prompts, conn.resources, conn.templates)
            self._tools_discovered(sup.name, server_id, conn.tools)
        self._invalidate()

    def _tools_discovered(self, name: str, server_id: str, tools: tuple[types.Tool, ...]) -> None:
        """BR-003: store the tools, refusing a server that would break the tool limits."""
        limits = self.settings.registry.limits
        others = sum(len(t) for n, t in self._known_tools.items() if n != name)
        try:
            check_tool_limits(limits, name, len(tools), others)
        except LimitExceededError as exc:
            logger.error("discovery of %s refused: %s", name, exc)
            self.discovery_refusals[name] = str(exc)
            self._known_tools.pop(name, None)
            return
        self.discovery_refusals.pop(name, None)
        if not tools:
            logger.warning("server %s lists no tools", name)
        self._known_tools[name] = tools
        self._discoveries[name] = self._discoveries.get(name, 0) + 1
        specs = [
            ToolSpec(
                original_name=t.name,
                description=t.description,
                input_schema=dict(t.input_schema or {}),
                output_schema=dict(t.output_schema) if t.output_schema else None,
                annotations=t.annotations.model_dump(mode="json", exclude_none=True) if t.annotations else None,
            )
            for t in tools
        ]
        async def store() -> None:
            for record in await self.registry.replace_tools(server_id, specs):
                self._tool_ids[record.name] = record.id

        self._mirror.submit(f"{name}: tools", store)
        self._reindex()

    def _poke(self) -> None:
        """Wake everyone in ``wait_until``: some state changed."""
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_until(self, predicate: Callable[[], bool], *, timeout_secs: float) -> None:
        """Wait for ``predicate`` to hold, re-checking on every state change.

        Raises ``TimeoutError`` after ``timeout_secs``.
        """
        with anyio.fail_after(timeout_secs):
            while not predicate():
                await self._changed.wait()

    def _invalidate(self) -> None:
        self._poke()
        self._catalog = None
        self._features = None
        self._exposed = None
        snapshot = self._exposure_key()
        if snapshot != self._exposed_snapshot:
            self._exposed_snapshot = snapshot
            for listener in list(self._listeners):
                listener()

    def on_resource_updated(self, listener: ResourceListener) -> Callable[[], None]:
        """Call ``listener(server, uri)`` when an upstream says a resource changed."""
        self._resource_listeners.append(listener)
        return lambda: self._resource_listeners.remove(listener)

    async def _resource_updated(self, server: str, uri: str) -> None:
        for listener in list(self._resource_listeners):
            await listener(server, uri)

    def _exposure_key(self) -> tuple[tuple[str, int], ...]:
        # Which servers are exposed, and which discovery of each: cheap on every state change.
        return tuple((name, self._discoveries.get(name, 0)) for name in self.exposed_servers())

    def on_change(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener`` whenever the set of exposed tools changes; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def wait_settled(self, timeout_secs: float) -> None:
        """Wait (up to ``timeout_secs``) until every server's first connection attempt resolved."""
        with anyio.move_on_after(timeout_secs):
            for event in list(self._settled.values()):
                await event.wait()

    def exposed_servers(self) -> list[str]:
        """CONNECTED and DEGRADED servers whose tools were accepted, sorted.

        Cached until the next state change, since every routed call and search asks.
        """
        if self._exposed is None:
            self._exposed = sorted(
                name
                for name, sup in self.supervisors.items()
                if is_exposed(sup.status) and sup.connection is not None and name in self._known_tools
            )
        return list(self._exposed)

    @property
    def catalog(self) -> Catalog:
        """The tools of exposed servers; rebuilt only after a change."""
        if self._catalog is None:
            tools = {name: self._known_tools[name] for name in self.exposed_servers()}
            serve = self.settings.serve
            self._catalog = Catalog.build(
                tools, separator=serve.name_separator, max_length=serve.max_name_length,
                known_servers=self.supervisors,
            )
        return self._catalog

    @property
    def features(self) -> FeatureCatalog:
        """Prompts, resources and templates of exposed servers; rebuilt only after a change."""
        if self._features is None:
            serve = self.settings.serve
            self._features = FeatureCatalog.build(
                {name: self._known_features[name] for name in self.exposed_servers() if name in self._known_features},
                separator=serve.name_separator,
                max_length=serve.max_name_length,
            )
        return self._features

    def servers_with(self, capability: str) -> list[str]:
        """Exposed servers that declared ``capability`` (``prompts``, ``resources``, ``logging``, ...)."""
        out = []
        for name in self.exposed_servers():
            conn = self.supervisors[name].connection
            caps = conn.capabilities if conn is not None else None
            if caps is not None and getattr(caps, capability, None) is not None:
                out.append(name)
        return out

    def connection(self, server: str) -> UpstreamConnection:
        """The live connection of ``server`` (BR-005 state check included)."""
        return self.supervisor(server).require_connection()

    def record_call(self, server: str, *, failed: bool) -> None:
        sup = self.supervisors.get(server)
        if sup is not None:
            sup.calls += 1
            sup.call_errors += failed

    def supervisor(self, name: str) -> ServerSupervisor:
        try:
            return self.supervisors[name]
        except KeyError:
            raise ServerNotFoundError(name) from None

    def supervisor_by_id(self, server_id: str) -> ServerSupervisor:
        for name, known in self.ids.items():
            if known == server_id:
                return self.supervisors[name]
        raise ServerNotFoundError(server_id)

    # -- routing -------------------------------------------------------------------

    def resolve(self, name: str, server: str | None = None) -> Route:
        """Route a tool name; a known server that is not serving gives a 503-style error."""
        target = server
        if target is None and "." in name:
            target = name.split(".", 1)[0]
        if target is not None and target in self.supervisors and target not in self.exposed_servers():
            self._unavailable(target)
        try:
            return self.catalog.resolve_route(name, server)
        except ToolNotFoundError:
            # A tool of a server that is reconnecting is not gone: say so (503-style).
            owner = self._offline_owner(name)
            if owner is not None:
                self._unavailable(owner)
            raise

    def _unavailable(self, server: str) -> None:
        sup = self.supervisors[server]
        detail = self.discovery_refusals.get(server) or sup.error_message
        if detail is None and sup.status in (ServerStatus.CONNECTING, ServerStatus.ERROR):
            detail = "reconnecting"
        raise ServerUnavailableError(server, sup.status.value, detail)

    def _offline_owner(self, name: str) -> str | None:
        exposed = set(self.exposed_servers())
        offline = {n: t for n, t in self._known_tools.items() if n not in exposed and n in self.supervisors}
        if not offline:
            return None
        serve = self.settings.serve
        offline_catalog = Catalog.build(offline, separator=serve.name_separator, max_length=serve.max_name_length)
        try:
            route = offline_catalog.resolve_route(name)
        except RoutingError:
            return None
        return route.server

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        server: str | None = None,
        progress: ProgressRelay | None = None,
        meta: types.RequestParamsMeta | None = None,
    ) -> types.CallToolResult:
        """Route and forward one ``tools/call`` through the pipeline, for the current caller.

        Facades and admin calls land here; the caller (if a client is behind the call) is
        the one its handler set, so sampling or elicitation during the call reaches it.
        """
        caller = current_caller.get() or NO_CALLER
        return await self.pipeline.call_tool_result(
            name, arguments, server=server, caller=caller, progress=progress, meta=meta
        )

    # -- admin operations ------------------------------------------------------------

    async def register_server(self, config: ServerConfig, *, auto_connect: bool = True) -> ServerRecord:
        """BR-001: persist, then supervise. Raises ``ServerExistsError``/``LimitExceededError``."""
        check_server_limit(self.settings.registry.limits, len(self.supervisors) + 1)
        record = await self.registry.register_server(spec_from_config(config), source=ServerSource.API)
        await self._start_supervisor(record.id, config, connect=auto_connect)
        return record

    async def connect_server(self, server_id: str) -> ServerStatus:
        """BR-002: idempotent for a connected server; otherwise starts connecting."""
        sup = self.supervisor_by_id(server_id)
        if sup.status not in (ServerStatus.CONNECTED, ServerStatus.DEGRADED, ServerStatus.CONNECTING):
            sup.request_connect()
            await anyio.lowlevel.checkpoint()
        return sup.status

    async def disconnect_server(self, server_id: str, *, force: bool = False) -> int:
        """BR-007; raises ``StateError`` unless CONNECTED."""
        sup = self.supervisor_by_id(server_id)
        return await sup.disconnect(force=force, drain_timeout=self.settings.serve.drain_timeout_secs)

    async def remove_server_by_id(self, server_id: str) -> None:
        """BR-008: disconnect (draining), drop tools from the index, delete the record."""
        sup = self.supervisor_by_id(server_id)
        if sup.status is ServerStatus.CONNECTED:
            await sup.disconnect(drain_timeout=self.settings.serve.drain_timeout_secs)
        await sup.stop()
        name = sup.name
        del self.supervisors[name]
        del self.ids[name]
        self._settled.pop(name, None)
        self._known_tools.pop(name, None)
        self._known_features.pop(name, None)
        self.search.remove_server(name)
        self._reindex()
        await self.flush()
        await self.registry.delete_server(server_id)
        self._invalidate()

    # -- search and the aggregator query ---------------------------------------------

    def index_ready(self) -> bool:
        """True when every discovered tool is in the search index."""
        return self.indexer.ready()

    def indexing_progress(self) -> tuple[int, int] | None:
        return self.indexer.embedding

    def _reindex(self) -> None:
        docs = []
        for name, tools in sorted(self._known_tools.items()):
            sup = self.supervisors.get(name)
            docs.extend(tool_docs(name, sup.config.description if sup else None, tools))
        self.indexer.update(docs)

    def _classified(self, key: str, kept: tuple[SkillAssignment, ...]) -> None:
        skill_ids = [a.skill_id for a in kept]
        primary = skill_ids[0] if skill_ids else None

        async def store() -> None:
            tool_id = self._tool_ids.get(key)
            if tool_id is not None:
                await self.registry.set_tool_classification(tool_id, skill_ids=skill_ids, primary_skill_id=primary)

        self._mirror.submit(f"{key}: skills", store)
        self._poke()

    def classification_counts(self) -> dict[str, int]:
        return self.indexer.classification_counts()

    def skills(self) -> list[SkillSpec]:
        return skills_of(self.settings.search)

    def search_tools(
        self, query: str, k: int = 10, *, server: str | None = None, skill: str | None = None
    ) -> list[SearchHit]:
        return self.search.search(query, k, server=server, skill=skill, allowed_servers=self.exposed_servers())

    async def query(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The aggregator query; raises ``InvalidQueryError`` / ``AggregationFailedError``."""
        request = parse_query_arguments(
            arguments,
            known_servers=set(self.supervisors),
            default_max_results=self.settings.aggregator.default_max_results,
        )
        targets = []
        for name in self.exposed_servers():
            connection = self.supervisors[name].connection
            if connection is not None:
                targets.append(PipelineTarget(self.pipeline, name, connection.tools))
        response = await self.engine.query(request, targets)
        return response.to_json()

    # -- health ------------------------------------------------------------------------

    def _health_monitor(self) -> HealthMonitor:
        store = LiveHealthStore(self._live_servers, self._persist_health)

        async def ping(server: ServerSnapshot) -> HealthResult:
            connection = self.supervisor(server.name).require_connection()
            started = anyio.current_time()
            await connection.ping(self.settings.health.timeout_secs)
            elapsed_ms = (anyio.current_time() - started) * 1000
            return HealthResult(HealthOutcome.HEALTHY, elapsed_ms, None)

        return HealthMonitor(
            self.settings.health,
            servers=store.snapshot,
            store=store,
            check=ping,  # type: ignore[arg-type]
            clock=self._health_clock,
        )

    def _live_servers(self) -> dict[str, tuple[str, LiveServer, str | None]]:
        return {
            self.ids[name]: (self.ids[name], sup, sup.config.health_check_url)
            for name, sup in self.supervisors.items()
            if name in self.ids
        }

    def _persist_health(
        self,
        server_id: str,
        expected: ServerStatus,
        status: ServerStatus,
        failures: int,
        checked_at: datetime,
        response_time_ms: float | None,
        last_error: str | None,
    ) -> None:
        self._mirror.submit(
            "health",
            lambda: self.registry.record_health(
                server_id, expected_status=expected, status=status, consecutive_failures=failures,
                checked_at=checked_at, response_time_ms=response_time_ms, last_error=last_error,
            ),
        )
