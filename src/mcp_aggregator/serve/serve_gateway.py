"""``ServeGateway``: the part of the gateway the MCP face uses, as a structural type.

``serve/`` depends on this surface only (``runner.py``, which builds the concrete
``Gateway``, is the one exception), so the MCP face can be read and type-checked without
the composition root, and a test can stand a smaller gateway in its place.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import mcp_types as types

from mcp_aggregator.catalog import Catalog, Route
from mcp_aggregator.catalog.feature_catalog import FeatureCatalog
from mcp_aggregator.code_mode import CodeSandbox
from mcp_aggregator.errors import UpstreamError
from mcp_aggregator.identity.query_scope import QueryScope
from mcp_aggregator.relay import CallPipeline
from mcp_aggregator.search import SearchResults, ToolSearch
from mcp_aggregator.search.use_learner import UseLearner
from mcp_aggregator.settings import Settings
from mcp_aggregator.upstreams.connection import ProgressRelay, UpstreamConnection
from mcp_aggregator.upstreams.server_supervisor import ServerSupervisor


class ServeGateway(Protocol):
    """What the MCP server, the surfaces, the facade views and the fast path call."""

    @property
    def settings(self) -> Settings: ...

    @property
    def pipeline(self) -> CallPipeline: ...

    @property
    def catalog(self) -> Catalog: ...

    @property
    def sandbox(self) -> CodeSandbox: ...

    @property
    def features(self) -> FeatureCatalog: ...

    @property
    def search(self) -> ToolSearch: ...

    @property
    def use_learner(self) -> UseLearner | None: ...

    @property
    def supervisors(self) -> Mapping[str, ServerSupervisor]: ...

    @property
    def discovery_refusals(self) -> Mapping[str, str]: ...

    def supervisor(self, name: str) -> ServerSupervisor: ...

    def connection(self, server: str) -> UpstreamConnection: ...

    def exposed_servers(self) -> list[str]: ...

    def servers_with(self, capability: str) -> list[str]: ...

    def resolve(self, name: str, server: str | None = None) -> Route: ...

    async def search_tools(
        self, query: str, k: int = 10, *, server: str | None = None, skill: str | None = None
    ) -> SearchResults: ...

    def scrub(self, text: str) -> str: ...

    def on_change(self, listener: Callable[[], None]) -> Callable[[], None]: ...

    def on_resource_updated(self, listener: Callable[[str, str], Awaitable[None]]) -> Callable[[], None]: ...

    async def wait_settled(self, timeout_secs: float) -> None: ...

    def list_wait_secs(self) -> float:
        """How long a listing waits for servers still making their first connection (see
        ``Gateway.list_wait_secs``)."""
        ...

    def health(self) -> dict[str, Any]:
        """The ``/healthz`` body (see ``Gateway.health``)."""
        ...

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        server: str | None = None,
        progress: ProgressRelay | None = None,
        meta: types.RequestParamsMeta | None = None,
    ) -> types.CallToolResult: ...

    def record_call(self, server: str, *, failed: bool, error: UpstreamError | None = None) -> None: ...

    async def query(self, arguments: Mapping[str, Any], *, within: QueryScope | None = None) -> dict[str, Any]: ...

    async def most_called(self, profile: str, limit: int) -> list[str]:
        """The canonical names ``profile`` called successfully most often (the audit trail's
        count; none without one), most called first."""
        ...
