"""The facade views (``ToolCatalogView``, ``ServerView``, ``QueryRunner``) read from a running ``Gateway``.

They live in ``serve/`` so that ``facades`` never imports the composition root. Tools are
named by their canonical ``server.tool`` name; ``get``/``execute`` also accept the exposed
name and a unique original name (``Gateway.resolve``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import mcp_types as types

from mcp_aggregator.apps import app_uri
from mcp_aggregator.catalog import CatalogEntry
from mcp_aggregator.errors import RegistryError, ToolNotFoundError
from mcp_aggregator.facades import ScoredTool, ScoredTools, ServerRecord, ServerStatus, ToolPage, ToolRecord, paginate
from mcp_aggregator.relay import NO_CALLER, current_caller
from mcp_aggregator.serve.listing_filter import ListingFilter
from mcp_aggregator.serve.profile_gateway import note_outside_call
from mcp_aggregator.serve.serve_gateway import ServeGateway
from mcp_aggregator.upstreams.server_supervisor import ServerSupervisor

logger = logging.getLogger(__name__)


def primary_skill(gateway: ServeGateway, canonical: str) -> str | None:
    """The first skill search classified the tool into, or None (not classified or not indexed yet)."""
    doc = gateway.search.get(canonical)
    return doc.skill_ids[0] if doc is not None and doc.skill_ids else None


def tool_record(entry: CatalogEntry, skill: str | None) -> ToolRecord:
    tool = entry.tool
    annotations = None
    if tool.annotations is not None:
        annotations = tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True) or None
    return ToolRecord(
        name=entry.canonical,
        server=entry.server,
        description=tool.description or "",
        input_schema=dict(tool.input_schema or {"type": "object"}),
        original_name=tool.name,
        skill=skill,
        title=tool.title,
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        annotations=annotations,
        app=app_uri(tool),
    )


def _session() -> str:
    """Who is searching and calling: the client, its profile and its HTTP session (one
    stdio client is one session)."""
    caller = current_caller.get() or NO_CALLER
    return f"{caller.identity.name or ''}|{caller.identity.profile}|{caller.session_id or ''}"


class GatewayToolCatalog:
    """``ToolCatalogView`` over the gateway's live catalog (CONNECTED and DEGRADED servers only);
    a tool a policy never lets the calling client call is not listed or found for it."""

    def __init__(self, gateway: ServeGateway) -> None:
        self.gateway = gateway
        self.listing = ListingFilter(gateway)

    def _hidden(self, entry: CatalogEntry) -> bool:
        caller = current_caller.get() or NO_CALLER
        return self.listing.hides(entry, caller.identity)

    async def search(self, query: str, k: int, server: str | None, skill: str | None) -> Sequence[ScoredTool]:
        if server is not None:
            self.gateway.supervisor(server)
        found = await self.gateway.search_tools(query, k, server=server, skill=skill)
        catalog = self.gateway.catalog
        hits = []
        for hit in found:
            entry = catalog.get(hit.key)
            # The index may still hold a tool the catalog just dropped.
            if entry is not None and not self._hidden(entry):
                skill_id = hit.skill_ids[0] if hit.skill_ids else None
                hits.append(ScoredTool(tool_record(entry, skill_id), hit.score))
        if (learner := self.gateway.use_learner) is not None:
            learner.searched(_session(), query, [hit.tool.name for hit in hits])
        return ScoredTools(hits, pending=found.pending, connecting=found.connecting)

    async def list(self, server: str | None, skill: str | None, cursor: str | None, limit: int) -> ToolPage:
        """Catalog order: servers by name, each server's tools in the order it lists them."""
        if server is not None:
            self.gateway.supervisor(server)
        records = []
        for entry in self.gateway.catalog.entries:
            if (server is not None and entry.server != server) or self._hidden(entry):
                continue
            doc = self.gateway.search.get(entry.canonical)
            skills = doc.skill_ids if doc is not None else ()
            if skill is not None and skill not in skills:
                continue
            records.append(tool_record(entry, skills[0] if skills else None))
        items, next_cursor = paginate(records, cursor, limit)
        return ToolPage(items, next_cursor)

    async def get(self, name: str) -> ToolRecord:
        entry = self._entry(name)
        return tool_record(entry, primary_skill(self.gateway, entry.canonical))

    async def execute(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        canonical = self._entry(name, calling=True).canonical
        result = await self.gateway.call_tool(canonical, arguments)
        if (learner := self.gateway.use_learner) is not None and not result.is_error:
            try:
                await learner.executed(_session(), canonical)
            except RegistryError as exc:  # learning is a side effect: the call succeeded
                logger.warning("search: cannot store a use of %s: %s", canonical, str(exc)[:300])
        return result

    async def input_schema(self, name: str, *, calling: bool = False) -> Mapping[str, Any]:
        return self._entry(name, calling=calling).tool.input_schema or {"type": "object"}

    def _entry(self, name: str, *, calling: bool = False) -> CatalogEntry:
        if calling:
            try:
                return self._entry(name)
            except ToolNotFoundError:
                note_outside_call(self.gateway, name, current_caller.get() or NO_CALLER)
                raise
        route = self.gateway.resolve(name)
        if route.entry is None:  # Catalog.resolve_route always sets it; kept total for mypy
            raise ToolNotFoundError(name)
        return route.entry


class GatewayServers:
    """``ServerView`` over the gateway's supervisors: every registered server, sorted by name."""

    def __init__(self, gateway: ServeGateway) -> None:
        self.gateway = gateway

    async def list(self) -> Sequence[ServerRecord]:
        return [self._record(name) for name in sorted(self.gateway.supervisors)]

    async def get(self, name: str) -> ServerRecord:
        self.gateway.supervisor(name)
        return self._record(name)

    async def status(self, name: str) -> ServerStatus:
        sup = self.gateway.supervisor(name)
        return ServerStatus(
            name=name,
            state=sup.status.value,
            since=None,
            last_error=self._scrubbed(sup.error_message or sup.last_error),
            details=_health(sup, self.gateway.scrub),
        )

    def _scrubbed(self, text: str | None) -> str | None:
        return self.gateway.scrub(text) if text else text

    def _record(self, name: str) -> ServerRecord:
        sup = self.gateway.supervisors[name]
        tools = [entry.original_name for entry in self.gateway.catalog.for_server(name)]
        details = _health(sup, self.gateway.scrub)
        if sup.connection is not None and sup.connection.protocol_version:
            details["protocolVersion"] = sup.connection.protocol_version
        if refusal := self.gateway.discovery_refusals.get(name):
            details["discoveryRefused"] = refusal
        return ServerRecord(
            name=name,
            status=sup.status.value,
            transport=sup.config.transport.value,
            tool_count=len(tools),
            description=sup.config.description or "",
            tools=tuple(tools),
            last_error=self._scrubbed(sup.error_message or sup.last_error),
            details=details,
        )


def _health(sup: ServerSupervisor, scrub: Callable[[str], str]) -> dict[str, Any]:
    """The health figures worth showing; absent ones are left out rather than sent as null.
    Error texts may quote upstream output: ``scrub`` hides the servers' secrets in them."""
    details: dict[str, Any] = {"consecutiveFailures": sup.consecutive_failures}
    if sup.last_health_check is not None:
        details["lastHealthCheck"] = sup.last_health_check.isoformat()
    if sup.response_time_ms is not None:
        details["responseTimeMs"] = round(sup.response_time_ms, 1)
    if sup.last_error:
        details["lastError"] = scrub(sup.last_error)
    return details


class GatewayQueryRunner:
    """``QueryRunner``: the aggregator query of the gateway, errors untouched."""

    def __init__(self, gateway: ServeGateway) -> None:
        self.gateway = gateway

    async def query(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return await self.gateway.query(arguments)
