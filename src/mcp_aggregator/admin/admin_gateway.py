"""``AdminGateway``: the part of the gateway the admin API drives, as a structural type.

The admin layer depends on this surface only, so it can be read (and type-checked) without
the rest of the composition root; ``mcp_aggregator.gateway.Gateway`` satisfies it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Protocol, cast

import mcp_types as types
from fastapi import Depends, Request

from mcp_aggregator.approvals.gateway_approvals import GatewayApprovals
from mcp_aggregator.audit.audit_trail import AuditTrail
from mcp_aggregator.caching.cache_stage import ResultCacheStage
from mcp_aggregator.credentials.credential_book import Credentials
from mcp_aggregator.guardrails.guard import Guard
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.installs.installer import Installer
from mcp_aggregator.live import CallSeries, EventHub
from mcp_aggregator.registry import Registry, ServerRecord
from mcp_aggregator.search import SearchResults
from mcp_aggregator.settings import ServerConfig, Settings
from mcp_aggregator.upstreams.server_supervisor import ServerSupervisor


class SkillView(Protocol):
    """A skill a tool can be classified into."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...


class AdminGateway(Protocol):
    """What the admin routes call; every method may raise an ``AggregatorError``."""

    @property
    def settings(self) -> Settings: ...

    @property
    def registry(self) -> Registry: ...

    @property
    def supervisors(self) -> Mapping[str, ServerSupervisor]: ...

    @property
    def credentials(self) -> Credentials:
        """Upstream sign-ins (``auth: oauth`` servers)."""
        ...

    async def wait_until(self, predicate: Callable[[], bool], *, timeout_secs: float) -> None:
        """Wait for ``predicate`` to hold, re-checking on every state change (``TimeoutError``)."""

    @property
    def installer(self) -> Installer:
        """Search and install from the MCP Registries (``registries:``)."""
        ...

    @property
    def audit(self) -> AuditTrail | None:
        """The audit trail; None when ``audit.enabled`` is false."""
        ...

    @property
    def approvals(self) -> GatewayApprovals:
        """Calls held for a person's approval (``approvals:``), and the decisions on them."""
        ...

    @property
    def result_cache(self) -> ResultCacheStage:
        """The opt-in tool result cache (its hit and miss counts feed ``/metrics``)."""
        ...

    def scrub(self, text: str) -> str:
        """``text`` with every server's secrets (literal or ``${VAR}``-expanded) as ``***``."""
        ...

    @property
    def series(self) -> CallSeries:
        """This replica's per-minute figures of the last hour (calls, latency, findings, states)."""
        ...

    @property
    def events(self) -> EventHub:
        """State changes, calls and findings as they happen."""
        ...

    @property
    def guard(self) -> Guard:
        """The guardrails; ``guard.counts``: their decisions since start."""
        ...

    def held_tools(self) -> dict[str, int]:
        """Tools held for approval, by server (servers holding none left out)."""
        ...

    def hold_reasons(self, server: str, definition: Mapping[str, Any]) -> list[str]:
        """Why a guardrail holds a tool with this pending definition (empty: none does)."""
        ...

    async def flush(self, server_id: str | None = None) -> None:
        """Wait until the write-behind of live status has reached the registry (with
        ``server_id``: that server's, ahead of the others')."""

    def discovered_tool_count(self, name: str) -> int | None:
        """How many tools server ``name`` serves as this process discovered them (the registry
        is given them write-behind); None when it has not discovered them."""
        ...

    async def register_server(self, config: ServerConfig, *, auto_connect: bool) -> ServerRecord: ...

    async def remove_server_by_id(self, server_id: str) -> None: ...

    async def connect_server(self, server_id: str) -> ServerStatus: ...

    async def approve_tools(self, server_id: str, names: Sequence[str]) -> list[str]: ...

    async def disconnect_server(self, server_id: str, *, force: bool) -> int: ...

    async def query(self, arguments: dict[str, Any]) -> dict[str, Any]: ...

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, server: str | None = None
    ) -> types.CallToolResult: ...

    async def search_tools(self, query: str, k: int, *, server: str | None, skill: str | None) -> SearchResults: ...

    def skills(self) -> Sequence[SkillView]: ...

    def indexing_progress(self) -> tuple[int, int] | None:
        """(embedded, total) while new tools are embedded for search, else None."""
        ...


def current_gateway(request: Request) -> AdminGateway:
    """The gateway ``build_admin_app`` stored on the app (a FastAPI dependency)."""
    return cast(AdminGateway, request.app.state.gateway)


GatewayDep = Annotated[AdminGateway, Depends(current_gateway)]
