"""``ProfileGateway``: the gateway as one profile's endpoint sees it.

It stands in for the gateway wherever the MCP face reads the catalogue (the surfaces, the
facade views, the fast path, the MCP server's handlers), so each of them serves the
profile's slice without knowing profiles exist: its ``catalog`` and ``features`` hold the
selected items with the profile's overrides (rebuilt when the gateway's catalogue changes,
never per call), its ``pipeline`` routes within the slice (a name outside it is "not found")
and applies overrides to arguments, search and the aggregator query keep to the slice, and
list-changed notifications fire only when the slice itself changed.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

import mcp_types as types

from mcp_aggregator.catalog import Catalog, Route
from mcp_aggregator.catalog.feature_catalog import FeatureCatalog, ServerFeatures
from mcp_aggregator.catalog.naming import namespace
from mcp_aggregator.code_mode import CodeSandbox
from mcp_aggregator.errors import (
    AggregatorError,
    OutsideProfileError,
    ServerNotFoundError,
    ServerUnavailableError,
    ToolHeldError,
    ToolNotFoundError,
    UpstreamError,
)
from mcp_aggregator.identity.catalog_slice import fingerprint, slice_catalog, slice_features
from mcp_aggregator.identity.profile import Profile
from mcp_aggregator.identity.query_scope import QueryScope
from mcp_aggregator.relay import NO_CALLER, Caller, CallPipeline, current_caller
from mcp_aggregator.relay.pipeline import Invocation
from mcp_aggregator.search import SearchResults, ToolSearch
from mcp_aggregator.search.use_learner import UseLearner
from mcp_aggregator.serve.serve_gateway import ServeGateway
from mcp_aggregator.settings import Settings
from mcp_aggregator.settings.serve_settings import ToolNames
from mcp_aggregator.upstreams.connection import ProgressRelay, UpstreamConnection
from mcp_aggregator.upstreams.server_supervisor import ServerSupervisor

_SEARCH_OVERFETCH = 4


def profile_of(gateway: ServeGateway) -> Profile | None:
    """The profile a view serves; None for the gateway itself (the whole catalogue as it is)."""
    return gateway.profile if isinstance(gateway, ProfileGateway) else None


def note_outside_call(
    gateway: ServeGateway, name: str, caller: Caller, arguments: Mapping[str, Any] | None = None
) -> None:
    """After ``gateway`` answered "not found" to a call of ``name``: if it is a profile's view
    and the whole gateway has the tool, the audit records the attempt as ``denied``."""
    if isinstance(gateway, ProfileGateway):
        gateway.note_outside_call(name, None, caller, arguments)


class ProfilePipeline(CallPipeline):
    """The gateway's stages over a profile's routes; a tool's override shapes its arguments."""

    def __init__(self, view: ProfileGateway, base: CallPipeline) -> None:
        super().__init__(view, base.stages, outgoing_meta=base.meta_hook, raw_ok=base.raw_ok)
        self._view = view

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, server: str | None = None, **kw: Any
    ) -> types.CallToolResult | types.InputRequiredResult:
        try:
            route = self._view.resolve(name, server)
        except ToolNotFoundError:
            self._view.note_outside_call(name, server, kw.get("caller", NO_CALLER), arguments)
            raise
        if route.entry is not None:
            override = self._view.profile.overrides.get(route.entry.canonical)
            if override is not None and override.changes_arguments:
                arguments = override.arguments(arguments)
        return await super().call_tool(name, arguments, server=server, **kw)


class ProfileGateway:
    """``ServeGateway`` (and the pipeline's ``Routes``) for one profile; see the module docstring."""

    def __init__(self, base: ServeGateway, profile: Profile) -> None:
        self.base = base
        self.profile = profile
        serve = base.settings.serve
        exposure = profile.exposure or serve.exposure
        own_serve = serve.model_copy(update={"exposure": exposure})
        self.settings: Settings = base.settings.model_copy(update={"serve": own_serve})
        self.pipeline: CallPipeline = ProfilePipeline(self, base.pipeline)
        self._seen_catalog: Catalog | None = None
        self._catalog = Catalog()
        self._seen_features: FeatureCatalog | None = None
        self._features = FeatureCatalog()
        self._servers: frozenset[str] = frozenset()
        self._feature_servers: frozenset[str] = frozenset()
        self._fingerprint: tuple[object, ...] | None = None
        self._listeners: list[Callable[[], None]] = []
        self._unsubscribe: Callable[[], None] | None = None

    # -- the slice, rebuilt per catalogue version ---------------------------------------------

    @property
    def catalog(self) -> Catalog:
        base = self.base.catalog
        if base is not self._seen_catalog:
            self._catalog = slice_catalog(base, self.profile, self.base.supervisors)
            self._servers = frozenset(self._catalog.servers)
            self._seen_catalog = base
        return self._catalog

    @property
    def features(self) -> FeatureCatalog:
        base = self.base.features
        if base is not self._seen_features:
            serve = self.settings.serve
            self._features, self._feature_servers = slice_features(
                self._listings(),
                self.profile,
                separator=serve.name_separator,
                max_length=serve.max_name_length,
                keep_unique_names=serve.tool_names is ToolNames.ORIGINAL,
            )
            self._seen_features = base
        return self._features

    def _listings(self) -> dict[str, ServerFeatures]:
        out = {}
        for server in self.base.exposed_servers():
            connection = self.base.supervisors[server].connection
            if connection is not None:
                out[server] = ServerFeatures(connection.prompts, connection.resources, connection.templates)
        return out

    def servers(self) -> Collection[str]:
        """Servers the profile reaches (whole, or through one of their items)."""
        _ = self.catalog, self.features
        return self._servers | self._feature_servers

    # -- ServeGateway ---------------------------------------------------------------------

    @property
    def search(self) -> ToolSearch:
        return self.base.search

    @property
    def use_learner(self) -> UseLearner | None:
        return self.base.use_learner

    @property
    def sandbox(self) -> CodeSandbox:
        """The gateway's; a script's tool calls go through this profile's pipeline."""
        return self.base.sandbox

    @property
    def supervisors(self) -> Mapping[str, ServerSupervisor]:
        servers = self.servers()
        return {name: sup for name, sup in self.base.supervisors.items() if name in servers}

    @property
    def discovery_refusals(self) -> Mapping[str, str]:
        servers = self.servers()
        return {name: text for name, text in self.base.discovery_refusals.items() if name in servers}

    def supervisor(self, name: str) -> ServerSupervisor:
        if name not in self.servers():
            raise ServerNotFoundError(name)
        return self.base.supervisor(name)

    def connection(self, server: str) -> UpstreamConnection:
        return self.base.connection(server)

    def exposed_servers(self) -> list[str]:
        servers = self.servers()
        return [name for name in self.base.exposed_servers() if name in servers]

    def servers_with(self, capability: str) -> list[str]:
        servers = self.servers()
        return [name for name in self.base.servers_with(capability) if name in servers]

    def record_call(self, server: str, *, failed: bool, error: UpstreamError | None = None) -> None:
        self.base.record_call(server, failed=failed, error=error)

    def resolve(self, name: str, server: str | None = None) -> Route:
        """Within the slice; the gateway's own answer only for a server of the profile that
        is not serving now (503-style) or a tool of the profile held by pinning, never for a
        tool outside it."""
        try:
            return self.catalog.resolve_route(name, server)
        except ServerNotFoundError:
            raise
        except ToolNotFoundError:
            try:
                self.base.resolve(name, server)
            except ServerUnavailableError as exc:
                if exc.server in self.servers() or self.profile.takes_server(exc.server):
                    raise
            except ToolHeldError as exc:
                if self.profile.takes("tool", exc.server, exc.tool):
                    raise  # held for review: the profile's clients are told so, as on /mcp
            except AggregatorError:
                pass
            raise ToolNotFoundError(name) from None

    def note_outside_call(
        self, name: str, server: str | None, caller: Caller, arguments: Mapping[str, Any] | None
    ) -> None:
        """Show the audit (the pipeline's watchers) a call of ``name`` that ``resolve`` refused,
        when the whole gateway routes it: an attempt to reach past the slice, which the client
        was told is "not found" like any unknown name."""
        try:
            route = self.base.resolve(name, server)
        except AggregatorError:
            return
        invocation = Invocation("tools/call", route.server, route.tool, caller, route, arguments)
        denied = OutsideProfileError(namespace(route.server, route.tool), self.profile.name)
        self.pipeline.settled(invocation, denied, time.perf_counter())

    async def search_tools(
        self, query: str, k: int = 10, *, server: str | None = None, skill: str | None = None
    ) -> SearchResults:
        catalog = self.catalog
        if self.profile.whole:
            return await self.base.search_tools(query, k, server=server, skill=skill)
        hits = await self.base.search_tools(query, k * _SEARCH_OVERFETCH, server=server, skill=skill)
        kept = [hit for hit in hits if catalog.get(hit.key) is not None][:k]
        return SearchResults(kept, pending=hits.pending, connecting=hits.connecting)

    def scrub(self, text: str) -> str:
        return self.base.scrub(text)

    def on_change(self, listener: Callable[[], None]) -> Callable[[], None]:
        """``listener`` hears of changes to this slice only."""
        if self._unsubscribe is None:
            self._fingerprint = fingerprint(self.catalog, self.features)
            self._unsubscribe = self.base.on_change(self._base_changed)
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _base_changed(self) -> None:
        now = fingerprint(self.catalog, self.features)
        if now != self._fingerprint:
            self._fingerprint = now
            for listener in list(self._listeners):
                listener()

    def on_resource_updated(self, listener: Callable[[str, str], Awaitable[None]]) -> Callable[[], None]:
        async def in_slice(server: str, uri: str) -> None:
            if self.profile.takes("resource", server, uri):
                await listener(server, uri)

        return self.base.on_resource_updated(in_slice)

    async def wait_settled(self, timeout_secs: float) -> None:
        await self.base.wait_settled(timeout_secs)

    def list_wait_secs(self) -> float:
        return self.base.list_wait_secs()

    async def most_called(self, profile: str, limit: int) -> list[str]:
        return await self.base.most_called(profile, limit)

    def health(self) -> dict[str, Any]:
        return self.base.health()

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        server: str | None = None,
        progress: ProgressRelay | None = None,
        meta: types.RequestParamsMeta | None = None,
    ) -> types.CallToolResult:
        caller: Caller = current_caller.get() or NO_CALLER
        return await self.pipeline.call_tool_result(
            name, arguments, server=server, caller=caller, progress=progress, meta=meta
        )

    async def query(self, arguments: Mapping[str, Any], *, within: QueryScope | None = None) -> dict[str, Any]:
        return await self.base.query(arguments, within=within or self)

    def tools_of(self, server: str, tools: Sequence[types.Tool]) -> Sequence[types.Tool]:
        """The tools of ``server`` in the slice, as the aggregator fan-out may call them."""
        catalog = self.catalog
        kept = []
        for tool in tools:
            entry = catalog.get(f"{server}.{tool.name}")
            if entry is not None and entry.server == server:
                kept.append(tool)
        return kept
