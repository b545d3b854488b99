"""The composition root: owns the task group, the registry, the supervisors and the indexes."""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import timedelta
from enum import StrEnum
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from anyio.abc import TaskGroup

from mcp_aggregator import __version__, telemetry
from mcp_aggregator.aggregate import AggregatorEngine, parse_query_arguments
from mcp_aggregator.approvals.approval import Approval
from mcp_aggregator.approvals.gateway_approvals import GatewayApprovals
from mcp_aggregator.audit.audit_trail import AuditTrail
from mcp_aggregator.audit.audit_writer import WallClock
from mcp_aggregator.bridges.scheme_sign_in import scheme_discovery
from mcp_aggregator.caching import ResultCache, ResultCacheConfig
from mcp_aggregator.caching.cache_stage import ResultCacheStage
from mcp_aggregator.caching.result_cache import Clock as CacheClock
from mcp_aggregator.catalog import Catalog, Route
from mcp_aggregator.catalog.catalog_service import CatalogService
from mcp_aggregator.catalog.feature_catalog import FeatureCatalog
from mcp_aggregator.catalog.tool_docs import tool_docs
from mcp_aggregator.catalog.tool_pin_book import ToolPinBook, pin_of, record_of
from mcp_aggregator.catalog.tool_pins import ToolPin
from mcp_aggregator.code_mode import CodeSandbox
from mcp_aggregator.credentials import AuthStatus, SecretBox
from mcp_aggregator.credentials.credential_book import Credentials
from mcp_aggregator.credentials.per_user import PerUserTokens
from mcp_aggregator.errors import StateError, UpstreamError
from mcp_aggregator.guardrails.decision import Decision
from mcp_aggregator.guardrails.gateway_guardrails import GatewayGuardrails
from mcp_aggregator.guardrails.guard import guard_for
from mcp_aggregator.health.health_monitor import Clock
from mcp_aggregator.health.server_state import ServerEvent, ServerStatus
from mcp_aggregator.identity.policy_stage import policy_stages
from mcp_aggregator.identity.query_scope import QueryScope
from mcp_aggregator.installs.installer import Installer
from mcp_aggregator.installs.mcp_registries import McpRegistries
from mcp_aggregator.installs.sealed_env import SealedEnv
from mcp_aggregator.live import CallSeries, EventHub, SeriesStage
from mcp_aggregator.logs import call_context
from mcp_aggregator.registry import (
    Registry,
    ServerRecord,
    ServerSource,
    ToolSpec,
    check_server_limit,
)
from mcp_aggregator.registry.change_feed import ChangeFeed
from mcp_aggregator.registry.heartbeat import Heartbeat
from mcp_aggregator.registry.registry_mirror import RegistryMirror
from mcp_aggregator.relay import NO_CALLER, Caller, CallerBackchannel, CallPipeline, Invocation, Stage, current_caller
from mcp_aggregator.relay.error_scrubbing import scrub_errors
from mcp_aggregator.relay.pipeline_target import PipelineTarget
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite, gateway_files
from mcp_aggregator.search import SearchResults, SkillSpec, ToolDoc, ToolSearch, build_tool_search
from mcp_aggregator.search.catalog_indexer import CatalogIndexer
from mcp_aggregator.search.classifier import SkillAssignment
from mcp_aggregator.search.embedding_cache import EmbeddingStore
from mcp_aggregator.search.free_heap import free_heap
from mcp_aggregator.search.skills import skills_of
from mcp_aggregator.search.use_learner import UseLearner
from mcp_aggregator.search.use_store import UseStore
from mcp_aggregator.settings import SecretScrubber, ServerConfig, Settings, secret_values
from mcp_aggregator.settings.server_records import config_from_record, spec_from_config
from mcp_aggregator.upstreams.connection import ProgressRelay, UpstreamConnection
from mcp_aggregator.upstreams.server_supervisor import RetryPolicy, ServerSupervisor, Sleeper
from mcp_aggregator.upstreams.upstream_health import upstream_health_monitor
from mcp_aggregator.upstreams.upstream_set import DesiredServer, Reconciled, UpstreamSet

logger = logging.getLogger(__name__)

ChangeListener = Callable[[], None]
ResourceListener = Callable[[str, str], Awaitable[None]]

_SHUTDOWN_GRACE_SECS = 10.0
_SHORT_INDEX_WAIT_SECS = 1.0
"""A search waits for the index only when what is left to embed takes about this long."""


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
        audit_clock: WallClock | None = None,
        cache_clock: CacheClock = time.monotonic,
    ) -> None:
        self.settings = settings
        self.state = GatewayState.NEW
        # First: a wrong OTEL_* variable is refused before anything is made.
        trace_settings = telemetry.TraceSettings.from_env(os.environ if env is None else env)
        self.tracing = None if trace_settings is None else telemetry.Tracing(trace_settings, version=__version__)
        """OpenTelemetry tracing, when the ``OTEL_*`` environment asks for it; else None."""
        self.engine = AggregatorEngine(
            settings.aggregator,
            tool_search=self._servers_fitting,
            environ=dict(os.environ) if env is None else dict(env),
        )
        self._search = search
        self._health_clock = health_clock
        health = settings.health
        self._changed = anyio.Event()
        self._waiting = 0
        self._mirror = RegistryMirror()
        self._indexer: CatalogIndexer | None = None
        self._tool_ids: dict[str, str] = {}
        self._unstored_skills: dict[str, tuple[SkillAssignment, ...]] = {}
        self._docs_of: dict[str, tuple[tuple[types.Tool, ...], str | None, list[ToolDoc]]] = {}
        self._tg: TaskGroup | None = None
        self._stack: AsyncExitStack | None = None
        self._registry: Registry | None = None
        self._reconcile_lock = anyio.Lock()
        self._pin_snapshot: frozenset[tuple[str, str, str | None, str | None]] = frozenset()
        self.change_feed: ChangeFeed | None = None
        """Set while the gateway follows a shared (PostgreSQL) registry's changes."""
        self._resource_listeners: list[ResourceListener] = []
        self.backchannel = CallerBackchannel(
            on_resource_updated=self._resource_updated,
            own_roots=[
                types.Root(uri=path.resolve().as_uri(), name=path.name or str(path))
                for path in settings.serve.workspace_roots
            ],
        )
        base_env = dict(os.environ) if env is None else dict(env)
        self._env = SealedEnv(base_env, lambda: SecretBox.open(settings.serve.data_dir, base_env))
        """``${VAR}`` values, and the ``${sealed:...}`` secrets of servers installed from a registry."""
        self._installer: Installer | None = None
        self._scrubber: tuple[tuple[int, ...], SecretScrubber] = ((), SecretScrubber())
        self.credentials = Credentials(
            settings.credentials,
            data_dir=settings.serve.data_dir,
            env=self._env,
            on_status=self._auth_changed,
            discovery=scheme_discovery,
        )
        self._sandbox_site = SandboxSite(
            settings.serve.sandbox,
            settings.serve.data_dir,
            hidden=gateway_files(settings.source_path, settings.registry.database_url, settings.search.cache_path),
        )
        """What every stdio server's sandbox (and every install step's) is made from."""
        self.upstreams = UpstreamSet(
            env=self._env,
            retry=RetryPolicy(
                health.reconnect_max_attempts,
                health.reconnect_backoff_base_secs,
                degraded_after=health.degraded_after,
                error_after=health.error_after,
            ),
            sleep=sleep,
            backchannel=self.backchannel,
            on_change=self._supervisor_changed,
            on_activity=self._poke,
            max_result_bytes=settings.serve.max_result_bytes,
            auth_for=self.credentials.auth_for,
            connect_concurrency=settings.serve.connect_limit,
            sandbox=self._sandbox_site,
        )
        self.catalogue = CatalogService(self.upstreams, settings.serve, settings.registry.limits, scrub=self.scrub)
        self.audit = self._audit_trail(audit_clock)
        """The audit trail; None with ``audit.enabled: false``."""
        self.series = CallSeries()
        """This replica's last hour of calls, latencies, findings and states, per minute."""
        self.events = EventHub()
        """State changes, calls and findings as they happen (the page's event stream)."""
        watching = [part.stage for part in (self.tracing, self.audit) if part is not None]
        watching.append(SeriesStage(self.series, self.events))
        # Outermost, so every stage and every caller sees upstream errors already scrubbed.
        policies = policy_stages(settings.policies, lambda: self.catalog)
        # Per-user tokens after the policies: a call a policy refuses never asks anyone to sign in.
        per_user = PerUserTokens(self.credentials)
        self.guardrails = GatewayGuardrails(
            guard_for(settings.guardrails, {p.name: p.guardrails for p in settings.profiles}),
            self.audit,
            self._findings,
        )
        self.guard = self.guardrails.guard
        """The guardrails (``guardrails:`` and the profiles' own); counted decisions in ``guard.counts``."""
        guards = self.guardrails.stages()
        self.approvals = GatewayApprovals(
            settings.approvals,
            {p.name: p.approvals for p in settings.profiles if p.approvals},
            settings.registry,
            catalog=lambda: self.catalog,
            scrub=self.scrub,
            audit=self.audit,
            page=lambda: self.credentials.public_base,
        )
        self.approvals.desk.listeners.append(self._approval_event)
        """Calls held for a person (``approvals:``); after the guardrails, so a person sees and
        approves the arguments as they will go (masked where a rule masks them)."""
        self.heartbeat = Heartbeat(settings.registry, self.approvals.desk.replica)
        """This replica's row in a shared registry's ``replicas``, and the settling of the
        calls held by replicas lost; idle on SQLite."""
        self.result_cache = ResultCacheStage(
            ResultCache(cache_clock, max_bytes=settings.serve.result_cache_bytes), self._cache_config
        )
        """Opt-in tool results (a server's ``cache:``); after the policies, so a refused call is never
        a hit, and inside the guardrails, so a result they mask is masked on every hit too."""
        self.pipeline = CallPipeline(
            self,
            (
                scrub_errors(self.scrub),
                *watching,
                *policies,
                *guards,
                *self.approvals.stages(),
                self.result_cache,
                per_user,
                *stages,
            ),
            outgoing_meta=self.tracing.outgoing_meta if self.tracing is not None else None,
            # Tracing wraps the upstream request; a webhook is awaited: both need the full pipeline.
            raw_ok=self.tracing is None and self.guardrails.webhooks is None,
        )
        self.descriptions = self.guardrails.descriptions
        if self.descriptions is not None:
            self.catalogue.screen = self.descriptions
        self.sandbox = CodeSandbox(settings.code_mode)
        """Runs code-mode scripts; its worker pool starts at the first script."""
        self.use_learner: UseLearner | None = None
        """Learns from facade searches followed by calls (``search.learn_from_use``); else None."""

    async def _approval_event(self, approval: Approval) -> None:
        """The page's live approvals view: which call, and what became of it. The arguments stay
        out of the event stream (they may hold what a guardrail would mask); the view reads
        them, masked, from the REST API."""
        self.events.publish(
            "approval",
            {
                "id": approval.id,
                "status": approval.status.value,
                "server": approval.server,
                "tool": approval.tool,
                "rule": approval.rule,
                "profile": approval.profile,
            },
        )

    async def __aenter__(self) -> Self:
        if self.state is not GatewayState.NEW:
            raise RuntimeError("a Gateway can be entered only once")
        async with AsyncExitStack() as stack:
            stack.callback(self._mirror.close)
            if self.tracing is not None:
                stack.push_async_callback(self.tracing.shutdown)
            stack.push_async_callback(self.guardrails.aclose)
            self._registry = await stack.enter_async_context(Registry(self.settings.registry))
            await stack.enter_async_context(self.credentials.open(self._registry))
            await stack.enter_async_context(self.approvals)
            await stack.enter_async_context(self.heartbeat)
            if self.audit is not None:
                await stack.enter_async_context(self.audit)
            if self._search is None:
                self._search = build_tool_search(self.settings.search, cache=self._shared_embedding_cache())
            stack.callback(self._search.close)
            if self.settings.search.learn_from_use:
                store = await stack.enter_async_context(UseStore(self.settings.registry))
                retention = timedelta(days=self.settings.search.learn_from_use_retention_days)
                self.use_learner = UseLearner(self._search, store, retention)
            if not self._registry.shared:
                # One process owns an embedded registry: nothing it stored is live any more.
                # A shared one holds other replicas' reports, which a start must not wipe.
                await self._registry.reset_after_restart()
            await self._registry.upsert_config_servers([spec_from_config(c) for c in self.settings.servers])
            self._installer = Installer(
                McpRegistries(self.settings.registries, self._registry),
                self._env,
                self.settings.serve.data_dir,
                sandbox=self._sandbox_site,
            )
            self.catalogue.pins = await self._open_tool_pins()
            await self.approvals.start(shared=self._registry.shared)
            if self._registry.shared:
                await self.heartbeat.announce()  # before any call is held here
                self.approvals.sweep_after(self.heartbeat)
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(self._tg.cancel_scope.cancel)
            await self._tg.start(self._mirror.run)
            if self.audit is not None:
                await self.audit.start(self._tg)
            await self._tg.start(self.sandbox.run)
            if self._registry.shared:
                await self._tg.start(self.heartbeat.run)
            self._indexer = CatalogIndexer(
                self.settings.search, self._search, on_classified=self._classified, on_indexed=self._poke
            )
            await self._indexer.start(self._tg)
            if self.use_learner is not None:
                await self._tg.start(self.use_learner.run)
            monitor = upstream_health_monitor(
                self.settings.health, self.upstreams, lambda: self.registry, self._mirror.submit, self._health_clock
            )
            await self._tg.start(monitor.run)
            health = self.settings.health
            await self._tg.start(self.upstreams.relist_loop, health.interval_secs, health.timeout_secs)
            self.upstreams.bind(self._tg)
            await self.reconcile()
            if self._registry.shared and self.settings.registry.change_feed:
                self.change_feed = ChangeFeed(
                    self.settings.registry.database_url,
                    self.settings.registry.pg_schema,
                    self.reconcile,
                    reconcile_interval_secs=self.settings.registry.reconcile_interval_secs,
                    on_reconciled=self._poke,
                )
                self.approvals.follow(self.change_feed)
                await self._tg.start(self.change_feed.run)
            self._stack = stack.pop_all()
        # What only the start needed (migrations, the model file's parsed graph) goes back.
        free_heap()
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
        if self.change_feed is not None:
            self.change_feed.stop()
        with anyio.move_on_after(_SHUTDOWN_GRACE_SECS, shield=True):
            await self.approvals.stop()
            await self.heartbeat.stop()
            await self.upstreams.stop_all()
            await self._mirror.flush()
        return await self._stack.__aexit__(exc_type, exc, tb)

    def held_tools(self) -> dict[str, int]:
        """Tools held for approval, by server (servers holding none left out)."""
        counts = {name: len(self.tool_pins.held(server_id)) for name, server_id in self.ids.items()}
        return {name: count for name, count in counts.items() if count}

    def hold_reasons(self, server: str, definition: Mapping[str, Any]) -> list[str]:
        """Why a guardrail holds a tool with this pending definition (empty: none does)."""
        return self.guardrails.hold_reasons(server, definition)

    def _audit_trail(self, clock: WallClock | None) -> AuditTrail | None:
        if not self.settings.audit.enabled:
            return None
        extra = {} if clock is None else {"clock": clock}
        return AuditTrail(self.settings.audit, self.settings.registry, scrub=self.scrub, **extra)

    def _shared_embedding_cache(self) -> EmbeddingStore | None:
        """With a shared registry, replicas share embeddings too: a new one embeds nothing known."""
        if self._registry is None or not self._registry.shared or self.settings.search.embedder == "none":
            return None
        # Imported when used: psycopg cost every start ~8 MB of RSS, and only a PostgreSQL
        # registry (shared by replicas) has this cache.
        from mcp_aggregator.search.pg_embedding_cache import PostgresEmbeddingCache

        return PostgresEmbeddingCache(self.settings.registry.database_url, self.settings.registry.pg_schema)

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            raise RuntimeError("the gateway is not running")
        return self._registry

    @property
    def installer(self) -> Installer:
        """Search and install from the configured MCP Registries (``registries:``)."""
        if self._installer is None:
            raise RuntimeError("the gateway is not running")
        return self._installer

    @property
    def env(self) -> Mapping[str, str]:
        """The environment ``${VAR}`` references in server configs expand from."""
        return self._env

    def scrub(self, text: str) -> str:
        """``text`` with every secret of every server's config (literal or expanded) as ``***``.

        For upstream error texts and relayed stderr before they reach a client or a log.
        """
        configs = [*self.settings.servers, *(sup.config for sup in self.supervisors.values())]
        key = tuple(id(c) for c in configs)
        if key != self._scrubber[0]:
            values = set().union(*(secret_values(c.connection_config(), self._env) for c in configs))
            self._scrubber = (key, SecretScrubber(values))
        return self._scrubber[1](text)

    @property
    def tool_pins(self) -> ToolPinBook:
        if self.catalogue.pins is None:
            raise RuntimeError("the gateway is not running")
        return self.catalogue.pins

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

    async def flush(self, server_id: str | None = None) -> None:
        """Wait until every state change so far is written to the registry; with ``server_id``,
        every change of that server (its status, tools and pins), ahead of the others'."""
        await self._mirror.flush(server_id)

    # -- the upstream set and the catalogue -------------------------------------------

    @property
    def supervisors(self) -> Mapping[str, ServerSupervisor]:
        return self.upstreams.supervisors

    @property
    def ids(self) -> Mapping[str, str]:
        return self.upstreams.ids

    @property
    def discovery_refusals(self) -> Mapping[str, str]:
        return self.catalogue.discovery_refusals

    async def reconcile(self) -> Reconciled:
        """Supervise exactly the servers the registry holds (config-file servers as configured).

        The seam through which a registry change made elsewhere takes effect here: the
        change feed calls it. Connect intent is the record's ``enabled`` (admin connect /
        disconnect, shared by all replicas) and the config's ``enabled``. Never runs
        concurrently with itself or with a registration or removal made here.
        """
        async with self._reconcile_lock:
            return await self._reconcile()

    async def _reconcile(self) -> Reconciled:
        configured = {c.name: c for c in self.settings.servers}
        desired = {}
        for record in await self.registry.list_servers():
            config = configured.get(record.name) or config_from_record(record)
            current = self.upstreams.supervisors.get(record.name)
            if current is not None and _same_spec(current.config, config):
                # Fields the registry does not store (timeouts, protocol) came with the live config.
                config = current.config
            desired[record.name] = DesiredServer(record.id, config, connect=config.enabled and record.enabled)
        gone = [name for name in self.upstreams.supervisors if name not in desired]
        result = await self.upstreams.reconcile(desired, drain_timeout=self.settings.serve.drain_timeout_secs)
        for name in gone:
            self._forget(name)
        await self._wake_signed_in()
        if self.registry.shared and self.catalogue.pins is not None:
            await self._reload_pins()
        self._invalidate()
        return result

    async def _reload_pins(self) -> None:
        """Take pins another replica approved or made: re-read them, re-review what is connected.

        A review persists only what it changes, so replicas converge instead of echoing.
        """
        await self.flush()
        records = await self.registry.list_tool_pins()
        snapshot = frozenset((r.server_id, r.tool_name, r.fingerprint, r.pending_fingerprint) for r in records)
        if snapshot == self._pin_snapshot:
            return
        self._pin_snapshot = snapshot
        self.catalogue.pins = await self._open_tool_pins()
        for sup in list(self.upstreams.supervisors.values()):
            if sup.connection is not None and sup.name in self.upstreams.ids:
                self._supervisor_changed(sup, None, False)

    def _findings(self, invocation: Invocation, decisions: Sequence[Decision]) -> None:
        self.series.record_findings(invocation.server, (decision.rule for decision in decisions))
        for decision in decisions:
            # Rule, action, kind and where: never the value found.
            self.events.publish(
                "finding",
                {
                    "server": invocation.server,
                    "tool": invocation.target,
                    "method": invocation.method,
                    "rule": decision.rule,
                    "action": decision.action.value,
                    "kind": decision.kind.value,
                    "where": decision.where.value,
                },
            )

    def _supervisor_changed(self, sup: ServerSupervisor, event: ServerEvent | None, persist: bool) -> None:
        server_id = self.upstreams.ids[sup.name]
        if event is not None:
            self._state_changed(sup, event)
        if event is not None and persist:
            error = sup.error_message
            if self.registry.shared:
                status = sup.status
                self._mirror.submit(
                    f"{sup.name}: {event.value}",
                    lambda: self.registry.record_status(server_id, status, error_message=error),
                    server_id,
                )
            else:
                self._mirror.submit(
                    f"{sup.name}: {event.value}",
                    lambda: self.registry.apply_event(server_id, event, error_message=error),
                    server_id,
                )
        if (event is None or event is ServerEvent.CONNECT_OK) and sup.connection is not None:
            if self.catalogue.discovered(sup.name, sup.connection):
                # A changed tool may answer differently: nothing kept from before it is served.
                self.result_cache.cache.forget(sup.name)
                self._store_tools(sup.name, server_id, self.catalogue.known_tools[sup.name])
            self._reindex()
        self._invalidate()

    def _state_changed(self, sup: ServerSupervisor, event: ServerEvent) -> None:
        states = Counter(s.status.value for s in self.upstreams.supervisors.values())
        self.series.record_states(states)
        error = self.scrub(sup.error_message) if sup.error_message else None
        self.series.record_transition(sup.name, sup.status.value, event.value, error)
        self.events.publish(
            "state", {"server": sup.name, "status": sup.status.value, "event": event.value, "error": error}
        )

    async def _wake_signed_in(self) -> None:
        """Connect servers parked for a sign-in that has since happened (on another replica)."""
        for name, sup in list(self.upstreams.supervisors.items()):
            if sup.status is ServerStatus.ERROR and await self.credentials.signed_in_elsewhere(self.ids[name]):
                sup.request_connect()

    def _auth_changed(self, server_id: str, status: AuthStatus) -> None:
        """Tokens that died drop the server's session; it then parks until someone signs in."""
        sup = self.upstreams.supervisors.get(next((n for n, i in self.ids.items() if i == server_id), ""))
        if sup is not None and sup.connection is not None and status is not AuthStatus.SIGNED_IN:
            sup.connection.abandon(f"sign-in required ({status.value})")
        self._poke()

    def _store_tools(self, name: str, server_id: str, tools: tuple[types.Tool, ...]) -> None:
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

        self._mirror.submit(f"{name}: tools", store, server_id)

    def _poke(self) -> None:
        """Wake everyone in ``wait_until``: some state changed."""
        # Every relayed call pokes twice; with nobody waiting that must cost nothing.
        if self._waiting:
            self._changed.set()
            self._changed = anyio.Event()

    async def wait_until(self, predicate: Callable[[], bool], *, timeout_secs: float) -> None:
        """Wait for ``predicate`` to hold, re-checking on every state change.

        Raises ``TimeoutError`` after ``timeout_secs``.
        """
        self._waiting += 1
        try:
            with anyio.fail_after(timeout_secs):
                while not predicate():
                    await self._changed.wait()
        finally:
            self._waiting -= 1

    def _invalidate(self) -> None:
        self._poke()
        self.catalogue.invalidate()

    def on_change(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener`` whenever what clients can see changed; returns an unsubscribe."""
        return self.catalogue.on_change(listener)

    def on_resource_updated(self, listener: ResourceListener) -> Callable[[], None]:
        """Call ``listener(server, uri)`` when an upstream says a resource changed."""
        self._resource_listeners.append(listener)
        return lambda: self._resource_listeners.remove(listener)

    async def _resource_updated(self, server: str, uri: str) -> None:
        for listener in list(self._resource_listeners):
            await listener(server, uri)

    async def wait_settled(self, timeout_secs: float) -> None:
        """Wait (up to ``timeout_secs``) until every server's first connection attempt resolved."""
        await self.upstreams.wait_settled(timeout_secs)

    def list_wait_secs(self) -> float:
        """How long a listing (``tools/list``, a search) gives servers still making their first
        connection: ``serve.list_wait_secs``, or nothing in a start of more servers than
        connect at once (``UpstreamSet.crowded``), to its last connection.

        There the whole list is a minute away, and an answer that waited for it would be as
        late: it answers at once from what is served, and clients hear ``list_changed`` as
        servers come. A call to a tool not known yet still
        waits for its server (``serve.list_wait_secs``): that wait is for the server asked for.
        """
        return 0.0 if self.upstreams.crowded or self.upstreams.queued_connects else self.settings.serve.list_wait_secs

    async def most_called(self, profile: str, limit: int) -> list[str]:
        """The canonical names ``profile`` called successfully most often, from the audit
        trail (none with ``audit.enabled: false``), most called first.

        Raises:
            RegistryError: the database refused the read.
        """
        if self.audit is None:
            return []
        return await self.audit.log.most_called(profile, limit)

    def health(self) -> dict[str, Any]:
        """The ``/healthz`` body, cheap at any moment: ``status`` is ``starting`` until every
        server asked to connect has had its first attempt resolved, then ``ok``; ``index`` is
        ``building`` while discovered tools wait for the search index, then ``whole``."""
        return {
            "status": "ok" if self.upstreams.settled() else "starting",
            "servers": {name: sup.status.value for name, sup in sorted(self.supervisors.items())},
            "tools": self.catalogue.served_tools(),
            "index": "whole" if self._indexer is not None and self._indexer.ready() else "building",
        }

    def discovered_tool_count(self, name: str) -> int | None:
        """The tools of ``name`` accepted from its listing (what the registry is given write-behind)."""
        tools = self.catalogue.known_tools.get(name)
        return None if tools is None else len(tools)

    def exposed_servers(self) -> list[str]:
        """CONNECTED and DEGRADED servers whose tools were accepted, sorted."""
        return self.catalogue.exposed_servers()

    @property
    def catalog(self) -> Catalog:
        """The tools of exposed servers; rebuilt only after a change."""
        return self.catalogue.catalog

    @property
    def features(self) -> FeatureCatalog:
        """Prompts, resources and templates of exposed servers; rebuilt only after a change."""
        return self.catalogue.features

    def servers_with(self, capability: str) -> list[str]:
        return self.catalogue.servers_with(capability)

    def resolve(self, name: str, server: str | None = None) -> Route:
        """Route a tool name; a known server that is not serving gives a 503-style error."""
        return self.catalogue.resolve(name, server)

    def connection(self, server: str) -> UpstreamConnection:
        """The live connection of ``server`` (BR-005 state check included)."""
        return self.upstreams.connection(server)

    def record_call(self, server: str, *, failed: bool, error: UpstreamError | None = None) -> None:
        """Count a call; its outcome feeds the server's status (see ``ServerSupervisor.call_failed``)."""
        sup = self.upstreams.supervisors.get(server)
        if sup is not None:
            if failed:
                sup.call_failed(error)
            else:
                sup.call_succeeded()

    def supervisor(self, name: str) -> ServerSupervisor:
        return self.upstreams.supervisor(name)

    def _cache_config(self, server: str) -> ResultCacheConfig | None:
        sup = self.upstreams.supervisors.get(server)
        return None if sup is None else sup.config.cache

    def supervisor_by_id(self, server_id: str) -> ServerSupervisor:
        return self.upstreams.supervisor_by_id(server_id)

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
        with call_context(server, name):
            return await self.pipeline.call_tool_result(
                name, arguments, server=server, caller=caller, progress=progress, meta=meta
            )

    # -- admin operations ------------------------------------------------------------

    async def register_server(self, config: ServerConfig, *, auto_connect: bool = True) -> ServerRecord:
        """BR-001: persist, then supervise. Raises ``ServerExistsError``/``LimitExceededError``."""
        check_server_limit(self.settings.registry.limits, len(self.upstreams.supervisors) + 1)
        spec = replace(spec_from_config(config), enabled=auto_connect)
        async with self._reconcile_lock:
            record = await self.registry.register_server(spec, source=ServerSource.API)
            if config.name not in self.upstreams:
                await self.upstreams.start(record.id, config, connect=auto_connect)
        self._invalidate()
        return record

    async def approve_tools(self, server_id: str, names: Collection[str]) -> list[str]:
        """Trust the held tools ``names`` (all when empty) and serve them; the names approved.

        Raises: ServerNotFoundError, ToolNotFoundError (a name is not held).
        """
        sup = self.supervisor_by_id(server_id)
        approved = self.tool_pins.approve(server_id, names)
        if approved and sup.connection is not None:
            self._supervisor_changed(sup, None, True)
        await self.flush(server_id)
        return approved

    async def _open_tool_pins(self) -> ToolPinBook:
        def persist(server_id: str, pins: Sequence[ToolPin]) -> None:
            records = [record_of(server_id, pin) for pin in pins]
            self._mirror.submit(
                f"{server_id}: pins", lambda: self.registry.save_tool_pins(server_id, records), server_id
            )

        security, serve = self.settings.security, self.settings.serve
        return ToolPinBook(
            [pin_of(record) for record in await self.registry.list_tool_pins()],
            persist=persist,
            enabled=security.pin_tool_definitions,
            new_tools=security.new_tools,
            separator=serve.name_separator,
            max_name_length=serve.max_name_length,
        )

    async def connect_server(self, server_id: str) -> ServerStatus:
        """BR-002: idempotent for a connected server; otherwise starts connecting.

        The intent is stored, so every replica connects (and a replica that starts later does).
        """
        # Under the reconcile lock: a reconcile reads the stored intents and then applies them,
        # and one that read before this write must not apply its stale intent after it.
        async with self._reconcile_lock:
            sup = self.supervisor_by_id(server_id)
            await self.registry.set_enabled(server_id, True)
            if sup.status not in (ServerStatus.CONNECTED, ServerStatus.DEGRADED, ServerStatus.CONNECTING):
                sup.request_connect()
                await anyio.lowlevel.checkpoint()
            return sup.status

    async def disconnect_server(self, server_id: str, *, force: bool = False) -> int:
        """BR-007; raises ``StateError`` unless CONNECTED. Every replica disconnects (stored intent)."""
        # Under the reconcile lock, as ``connect_server``: a reconcile that read the intent
        # before this write (still "connect") would otherwise reconnect the server just after.
        async with self._reconcile_lock:
            sup = self.supervisor_by_id(server_id)
            if sup.status is not ServerStatus.CONNECTED:
                raise StateError(f"Server {sup.name} cannot be disconnected in status {sup.status.value}")
            await self.registry.set_enabled(server_id, False)
            # No checkpoint between the write and the move to DISCONNECTED inside ``disconnect``:
            # a reconcile woken by our own notification finds the server already disconnected.
            return await sup.disconnect(force=force, drain_timeout=self.settings.serve.drain_timeout_secs)

    async def remove_server_by_id(self, server_id: str) -> None:
        """BR-008: disconnect (draining), drop tools from the index, delete the record."""
        async with self._reconcile_lock:
            name = self.supervisor_by_id(server_id).name
            await self.upstreams.remove(name, drain_timeout=self.settings.serve.drain_timeout_secs)
            self._forget(name)
            await self.flush(server_id)
            await self.registry.delete_server(server_id)
        self._invalidate()

    def _forget(self, name: str) -> None:
        self.catalogue.forget(name)
        self.tool_pins.forget_server(name)
        self.search.remove_server(name)
        self.series.forget(name)
        self._reindex()

    # -- search and the aggregator query ---------------------------------------------

    def index_ready(self) -> bool:
        """True when every discovered tool is in the search index."""
        return self.indexer.ready()

    def indexing_progress(self) -> tuple[int, int] | None:
        return self.indexer.embedding

    def _reindex(self) -> None:
        docs = []
        known = self.catalogue.known_tools
        for name in [n for n in self._docs_of if n not in known]:
            del self._docs_of[name]
        for name, tools in sorted(known.items()):
            sup = self.supervisors.get(name)
            description = sup.config.description if sup else None
            cached = self._docs_of.get(name)
            # Made again only for the server whose listing changed: a start at fifty servers
            # otherwise rebuilt every server's documents each time one connected.
            if cached is None or cached[0] is not tools or cached[1] != description:
                cached = self._docs_of[name] = (tools, description, tool_docs(name, description, tools))
            docs.extend(cached[2])
        self.indexer.update(docs)

    def _classified(self, key: str, kept: tuple[SkillAssignment, ...]) -> None:
        # Collected and written in one transaction per batch: a start classifies thousands.
        if not self._unstored_skills:
            self._mirror.submit("skills", self._store_skills)
        self._unstored_skills[key] = kept
        self._poke()

    async def _store_skills(self) -> None:
        batch, self._unstored_skills = self._unstored_skills, {}
        unknown = await self._write_skills(batch)
        if unknown:
            # Tools discovered after this write was queued: their own write is behind it.
            self._mirror.submit("skills", lambda: self._write_skills(unknown))

    async def _write_skills(self, batch: Mapping[str, tuple[SkillAssignment, ...]]) -> dict[str, Any]:
        """Stores ``batch``; returns the part whose tools are not stored (yet)."""
        rows, unknown = [], {}
        for key, kept in batch.items():
            tool_id = self._tool_ids.get(key)
            if tool_id is None:
                unknown[key] = kept
            else:
                skill_ids = [a.skill_id for a in kept]
                rows.append((tool_id, skill_ids, skill_ids[0] if skill_ids else None))
        await self.registry.set_tool_classifications(rows)
        return unknown

    def classification_counts(self) -> dict[str, int]:
        return self.indexer.classification_counts()

    def skills(self) -> list[SkillSpec]:
        return skills_of(self.settings.search)

    async def search_tools(
        self, query: str, k: int = 10, *, server: str | None = None, skill: str | None = None
    ) -> SearchResults:
        """The best tools for ``query``; embedding and ranking run in a worker thread so the
        event loop keeps relaying calls meanwhile (``ToolSearch.search`` is thread-safe).

        Like ``tools/list``, a search first gives upstreams still connecting, and tools
        still being indexed, ``serve.list_wait_secs`` in all, when that wait is short (a
        few servers starting, a few tools to embed). In a large start (connections waiting
        for their turn, or more tools to embed than ``_SHORT_INDEX_WAIT_SECS`` allows) it
        answers at once from what is indexed. Either way the results say what they lack
        (``SearchResults.pending``, ``SearchResults.connecting``).
        """
        wait = self.list_wait_secs()
        if self.indexer.backlog_secs() > _SHORT_INDEX_WAIT_SECS:
            wait = 0.0
        if wait:
            with anyio.move_on_after(wait):
                await self.wait_settled(wait)
                await self.indexer.wait_ready(wait)
        allowed = self.exposed_servers()
        search = self.search
        results = await anyio.to_thread.run_sync(
            lambda: search.search(query, k, server=server, skill=skill, allowed_servers=allowed)
        )
        results.connecting = self.upstreams.unsettled
        return results

    async def _servers_fitting(self, query: str, k: int) -> list[str]:
        return [hit.server for hit in await self.search_tools(query, k)]

    async def query(self, arguments: Mapping[str, Any], *, within: QueryScope | None = None) -> dict[str, Any]:
        """The aggregator query; raises ``InvalidQueryError`` / ``AggregationFailedError``.

        ``within``: a profile's slice (its servers, tools and pipeline); the caller's identity
        rides on every fan-out call."""
        caller = current_caller.get()
        identity_only = (
            Caller(
                identity=caller.identity,
                request_id=caller.request_id,
                http_request_id=caller.http_request_id,
                session_id=caller.session_id,
                origin=caller.origin,
            )
            if caller is not None
            else NO_CALLER
        )
        request = parse_query_arguments(
            arguments,
            known_servers=set(self.upstreams.supervisors) if within is None else within.servers(),
            default_max_results=self.settings.aggregator.default_max_results,
        )
        pipeline = self.pipeline if within is None else within.pipeline
        targets = []
        for name in self.exposed_servers():
            if self.upstreams.supervisors[name].connection is None:
                continue
            # The catalogue's tools, not the connection's: screened by the guardrails and
            # pinning (held ones left out, masked ones masked) like every other way to them.
            served = self.catalogue.known_tools.get(name, ())
            tools = served if within is None else within.tools_of(name, served)
            if tools:
                targets.append(PipelineTarget(pipeline, name, tools, identity_only))
        response = await self.engine.query(request, targets)
        return response.to_json()


def _same_spec(a: ServerConfig, b: ServerConfig) -> bool:
    """Whether two configs agree on everything the registry stores (connect intent aside)."""
    return replace(spec_from_config(a), enabled=True) == replace(spec_from_config(b), enabled=True)
