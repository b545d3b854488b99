"""``GET /api/v1/aggregator/audit``: the audit trail, newest first, paged; ``/audit/export``: JSON lines."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any, Final

import orjson
from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp_aggregator.admin.admin_gateway import AdminGateway, GatewayDep
from mcp_aggregator.audit import AuditLog, AuditQuery, Outcome

router = APIRouter(prefix="/api/v1/aggregator", tags=["audit"])

EXPORT_PAGE: Final = 1000
MAX_ID: Final = 2**63 - 1
"""Ids are 64-bit: a larger ``before`` is a 422, not a database error."""
_DISABLED: dict[int | str, dict[str, Any]] = {404: {"description": "The audit trail is off (audit.enabled: false)"}}


class AuditItem(BaseModel):
    """One audited call. ``arguments`` only with ``audit.include_arguments: true`` (secrets hidden)."""

    model_config = ConfigDict(extra="allow")

    id: int
    time: datetime
    client: str | None
    profile: str
    method: str
    server: str
    tool: str
    outcome: Outcome
    duration_ms: float
    arguments_digest: str | None
    arguments: Any = None
    error: str | None = None
    request_id: str | None = Field(None, description="The HTTP request's id (X-Request-Id, as in the access log)")
    jsonrpc_id: str | None = Field(None, description="The client's JSON-RPC id of the request")
    guardrails: list[dict[str, Any]] | None = Field(
        None, description="What guardrail rules decided: {rule, action, kind, where, found} (never a value)"
    )


class AuditPageOut(BaseModel):
    items: list[AuditItem]
    next_before: int | None = Field(description="Pass as ``before`` for the next (older) page; null on the last")


class _Filters(BaseModel):
    client: str | None = Field(None, max_length=255)
    profile: str | None = Field(None, max_length=255)
    tool: str | None = Field(None, max_length=512)
    server: str | None = Field(None, max_length=255)
    outcome: Outcome | None = None
    request_id: str | None = Field(None, max_length=128, description="The HTTP request's id (X-Request-Id)")
    since: datetime | None = Field(None, description="ISO 8601; without a zone it is UTC")
    until: datetime | None = Field(None, description="Entries before this time (ISO 8601; without a zone, UTC)")

    @model_validator(mode="after")
    def _ordered(self) -> _Filters:
        if self.since is not None and self.until is not None and _utc(self.until) <= _utc(self.since):
            raise ValueError("until must be later than since (the time range is reversed or empty)")
        return self


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _log(gateway: AdminGateway) -> AuditLog:
    if gateway.audit is None:
        raise HTTPException(404, "the audit trail is off (audit.enabled: false)")
    return gateway.audit.log


def _query(filters: _Filters, *, limit: int, before: int | None) -> AuditQuery:
    since = None if filters.since is None else _utc(filters.since)
    until = None if filters.until is None else _utc(filters.until)
    return AuditQuery(
        client=filters.client,
        profile=filters.profile,
        tool=filters.tool,
        server=filters.server,
        outcome=filters.outcome,
        request_id=filters.request_id,
        since=since,
        until=until,
        before=before,
        limit=limit,
    )


@router.get("/audit", responses=_DISABLED, response_model=AuditPageOut)
async def audit(
    gateway: GatewayDep,
    filters: Annotated[_Filters, Query()],
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    before: Annotated[int | None, Query(ge=1, le=MAX_ID, description="The id to page on from (older entries)")] = None,
) -> JSONResponse:
    """Audited calls matching every filter given, newest first, ``limit`` per page.

    Each item: time, client, profile, method, server, tool, outcome (``ok``, ``error``,
    ``denied``), duration, the SHA-256 of the arguments (and their values, secrets hidden,
    with ``audit.include_arguments``), the error text, the HTTP request's id
    (``request_id``, the ``X-Request-Id`` of the call's request), the JSON-RPC id and what
    guardrail rules decided on it (``guardrails``: rule, action, kind, where, labels found). Calls
    made in the last second may not be written yet. A bad parameter is a 422 naming it.
    """
    log = _log(gateway)
    include = gateway.settings.audit.include_arguments
    page = await log.query(_query(filters, limit=limit, before=before))
    # Optional keys (arguments, error, request_id, jsonrpc_id) are left out rather than null.
    items = [entry.to_json(with_arguments=include) for entry in page.items]
    return JSONResponse({"items": items, "next_before": page.next_before})


@router.get(
    "/audit/export",
    responses={**_DISABLED, 200: {"content": {"application/x-ndjson": {}}, "description": "One entry per line"}},
    response_class=StreamingResponse,
)
async def export(gateway: GatewayDep, filters: Annotated[_Filters, Query()]) -> StreamingResponse:
    """Every audited call matching the filters as JSON lines, newest first (the items of ``/audit``)."""
    log = _log(gateway)
    include = gateway.settings.audit.include_arguments

    async def lines() -> AsyncIterator[bytes]:
        before = None
        while True:
            page = await log.query(_query(filters, limit=EXPORT_PAGE, before=before))
            if page.items:
                yield b"".join(orjson.dumps(e.to_json(with_arguments=include)) + b"\n" for e in page.items)
            if page.next_before is None:
                return
            before = page.next_before

    return StreamingResponse(lines(), media_type="application/x-ndjson")
