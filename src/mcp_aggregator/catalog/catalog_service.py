"""What the serving upstreams offer, and the routing tables over it.

Discovery results arrive here (``discovered``); the tool limits of BR-003 are applied; the
``Catalog`` (tools) and ``FeatureCatalog`` (prompts, resources, templates) are rebuilt
lazily after a change and shared until the next one, so the call path only reads
dictionaries. Definition pinning belongs here too: it decides which discovered tools may
be exposed.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence

import mcp_types as types

from mcp_aggregator.apps import shown_tool
from mcp_aggregator.catalog.catalog import Catalog, EntriesByServer, Route
from mcp_aggregator.catalog.feature_catalog import FeatureCatalog, ServerFeatures
from mcp_aggregator.catalog.tool_pin_book import ToolPinBook
from mcp_aggregator.errors import LimitExceededError, RoutingError, ServerUnavailableError, ToolNotFoundError
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.registry import check_tool_limits
from mcp_aggregator.registry.limits import Limits
from mcp_aggregator.settings.serve_settings import ServeSettings, ToolNames
from mcp_aggregator.upstreams.connection import UpstreamConnection
from mcp_aggregator.upstreams.upstream_set import UpstreamSet

logger = logging.getLogger(__name__)

ChangeListener = Callable[[], None]
DescriptionScreen = Callable[[str, Sequence[types.Tool]], tuple[tuple[types.Tool, ...], frozenset[str]]]
"""Judges a server's listed tools (the guardrails): the tools as served (a masked description
put in), and the names of those to hold until an admin approves them."""


_Sources = tuple[tuple[tuple[str, tuple[types.Tool, ...], ServerFeatures | None], ...], frozenset[str]]
"""What a catalogue is built from: each exposed server's tools and features, and the servers known."""


def _same_sources(old: _Sources, new: _Sources) -> bool:
    """The same servers, each with the same tools and features objects (identity: a discovery
    makes new ones), and the same servers known."""
    return (
        old[1] == new[1]
        and len(old[0]) == len(new[0])
        and all(a[0] == b[0] and a[1] is b[1] and a[2] is b[2] for a, b in zip(old[0], new[0], strict=True))
    )


class CatalogService:
    """The catalogue of the servers in ``upstreams`` that are serving and whose tools were accepted."""

    def __init__(
        self,
        upstreams: UpstreamSet,
        serve: ServeSettings,
        limits: Limits,
        *,
        scrub: Callable[[str], str] = str,
    ) -> None:
        self._upstreams = upstreams
        self._serve = serve
        self._limits = limits
        self._scrub = scrub
        self.pins: ToolPinBook | None = None
        """Definition pinning (set once the registry's pins are loaded); ``None``: every tool passes."""
        self.screen: DescriptionScreen | None = None
        """The guardrails on tool definitions; ``None``: none judge them."""
        self.discovery_refusals: dict[str, str] = {}
        self.known_tools: dict[str, tuple[types.Tool, ...]] = {}
        self._known_features: dict[str, ServerFeatures] = {}
        self._discoveries: dict[str, int] = {}
        self._catalog: Catalog | None = None
        self._built: tuple[_Sources, Catalog] | None = None
        """The last catalogue built, and from what (kept over an ``invalidate``)."""
        self._entries: EntriesByServer = {}
        """Each server's entries of the last catalogue built (``Catalog.build``'s ``reuse``)."""
        self._features: FeatureCatalog | None = None
        self._exposed: list[str] | None = None
        self._snapshot: tuple[tuple[str, int], ...] = ()
        self._listeners: list[ChangeListener] = []

    # -- discovery ---------------------------------------------------------------------

    def discovered(self, name: str, connection: UpstreamConnection) -> bool:
        """Take a server's discovery; False when BR-003's limits refuse its tools.

        Tools held by definition pinning, or by a guardrail on their definition, are left out:
        not served, searched or stored.
        """
        tools = connection.tools
        suspect: frozenset[str] = frozenset()
        if self.screen is not None:
            tools, suspect = self.screen(name, tools)
        if self.pins is not None:
            tools = self.pins.review(self._upstreams.ids[name], name, tools, suspect)
        elif suspect:
            tools = tuple(tool for tool in tools if tool.name not in suspect)
        others = sum(len(t) for n, t in self.known_tools.items() if n != name)
        try:
            check_tool_limits(self._limits, name, len(tools), others)
        except LimitExceededError as exc:
            logger.error("discovery of %s refused: %s", name, exc)
            self.discovery_refusals[name] = str(exc)
            self.known_tools.pop(name, None)
            self._known_features.pop(name, None)
            return False
        self.discovery_refusals.pop(name, None)
        if not tools:
            logger.warning("server %s lists no tools", name)
        self.known_tools[name] = tools
        self._known_features[name] = ServerFeatures(connection.prompts, connection.resources, connection.templates)
        self._discoveries[name] = self._discoveries.get(name, 0) + 1
        return True

    def forget(self, name: str) -> None:
        self.known_tools.pop(name, None)
        self._known_features.pop(name, None)
        self.discovery_refusals.pop(name, None)

    # -- change tracking ----------------------------------------------------------------

    def invalidate(self) -> None:
        """Something changed (a state, a discovery): drop the tables; tell listeners if exposure changed."""
        self._catalog = None
        self._features = None
        self._exposed = None
        snapshot = tuple((name, self._discoveries.get(name, 0)) for name in self.exposed_servers())
        if snapshot != self._snapshot:
            self._snapshot = snapshot
            for listener in list(self._listeners):
                listener()

    def on_change(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener`` whenever what clients can see changed; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    # -- views ------------------------------------------------------------------------------

    def exposed_servers(self) -> list[str]:
        """CONNECTED and DEGRADED servers whose tools were accepted, sorted (cached until a change)."""
        if self._exposed is None:
            self._exposed = [name for name in self._upstreams.serving() if name in self.known_tools]
        return list(self._exposed)

    def served_tools(self) -> int:
        """How many tools are served, without building the catalogue when it is stale (a start
        changes it with every server that connects, and a health check must stay cheap)."""
        if self._catalog is not None:
            return len(self._catalog)
        return sum(len(self.known_tools[name]) for name in self.exposed_servers())

    @property
    def catalog(self) -> Catalog:
        """Built again after a change, unless what it is built from is the same: a state change
        that exposes nothing new (a health check, a server starting to connect) keeps it, and
        with it everything made from it (the facades' domains). Building 10,000 tools' catalog
        takes the event loop a tenth of a second or more, and a start changes state hundreds
        of times."""
        if self._catalog is not None:
            return self._catalog
        sources = self._sources()
        if self._built is not None and _same_sources(self._built[0], sources):
            self._catalog = self._built[1]
            return self._catalog
        features = self.features
        tools = {
            # A tool's app address is shown as clients read it (shared ones namespaced).
            name: [shown_tool(tool, functools.partial(features.shown_uri, name)) for tool in self.known_tools[name]]
            for name in self.exposed_servers()
        }
        self._catalog = Catalog.build(
            tools,
            separator=self._serve.name_separator,
            max_length=self._serve.max_name_length,
            known_servers=self._upstreams.supervisors,
            keep_unique_names=self._serve.tool_names is ToolNames.ORIGINAL,
            reuse=self._entries,
        )
        self._built = (sources, self._catalog)
        return self._catalog

    def _sources(self) -> _Sources:
        exposed = self.exposed_servers()
        return (
            tuple((name, self.known_tools[name], self._known_features.get(name)) for name in exposed),
            frozenset(self._upstreams.supervisors),
        )

    @property
    def features(self) -> FeatureCatalog:
        if self._features is None:
            exposed = {n: self._known_features[n] for n in self.exposed_servers() if n in self._known_features}
            self._features = FeatureCatalog.build(
                exposed,
                separator=self._serve.name_separator,
                max_length=self._serve.max_name_length,
                keep_unique_names=self._serve.tool_names is ToolNames.ORIGINAL,
            )
        return self._features

    def servers_with(self, capability: str) -> list[str]:
        """Exposed servers that declared ``capability`` (``prompts``, ``resources``, ``logging``, ...)."""
        out = []
        for name in self.exposed_servers():
            conn = self._upstreams.supervisors[name].connection
            caps = conn.capabilities if conn is not None else None
            if caps is not None and getattr(caps, capability, None) is not None:
                out.append(name)
        return out

    # -- routing ------------------------------------------------------------------------

    def resolve(self, name: str, server: str | None = None) -> Route:
        """Route a tool name (BR-005); a known server that is not serving gives a 503-style error."""
        target = server
        if target is None and "." in name:
            target = name.split(".", 1)[0]
        if target is not None and target in self._upstreams and target not in self.exposed_servers():
            self._unavailable(target)
        try:
            return self.catalog.resolve_route(name, server)
        except ToolNotFoundError:
            # A tool of a server that is reconnecting is not gone: say so (503-style).
            owner = self._offline_owner(name)
            if owner is not None:
                self._unavailable(owner)
            if self.pins is not None:
                self.pins.check_not_held(name, server)
            raise

    def _unavailable(self, server: str) -> None:
        sup = self._upstreams.supervisor(server)
        detail = self.discovery_refusals.get(server) or sup.error_message
        if detail is None and sup.status in (ServerStatus.CONNECTING, ServerStatus.ERROR):
            detail = "reconnecting"
        # The detail may quote upstream output: the servers' secrets never leave.
        raise ServerUnavailableError(server, sup.status.value, self._scrub(detail) if detail else None)

    def _offline_owner(self, name: str) -> str | None:
        exposed = set(self.exposed_servers())
        offline = {n: t for n, t in self.known_tools.items() if n not in exposed and n in self._upstreams}
        if not offline:
            return None
        catalog = Catalog.build(offline, separator=self._serve.name_separator, max_length=self._serve.max_name_length)
        try:
            return catalog.resolve_route(name).server
        except RoutingError:
            return None
