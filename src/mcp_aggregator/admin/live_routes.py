"""``GET /series``: this replica's last hour per minute; ``GET /events``: what happens, as it
happens (server-sent events), opened with a short-lived ticket from ``POST /events/ticket``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Final

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from mcp_aggregator.admin.admin_gateway import GatewayDep
from mcp_aggregator.admin.event_tickets import TICKET_SECS, issue_ticket
from mcp_aggregator.live import EventHub

router = APIRouter(prefix="/api/v1/aggregator", tags=["live"])

HEARTBEAT_SECS: Final = 15.0
RETRY_MS: Final = 2000
SSE_HEADERS: Final = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


@router.get("/series")
async def series(
    gateway: GatewayDep,
    minutes: Annotated[int, Query(ge=1, le=60, description="How many minutes back, the current one last")] = 60,
    server: Annotated[str | None, Query(max_length=255, description="One server, with its tools one by one")] = None,
) -> dict[str, Any]:
    """Per-minute figures of the last ``minutes``, oldest first, counted by this replica.

    ``total`` and ``servers.<name>``: ``calls``, ``errors``, ``denied``, ``p50_ms``,
    ``p95_ms`` (null in a minute without calls; a percentile is the upper edge of a
    histogram bin, within 25 %); ``tools.<tool>`` the same, with ``server`` only;
    ``states.<STATUS>``: servers in each state; ``transitions`` (with ``server`` only): its
    last 20 state changes (time, status, event, error); ``findings``: guardrail findings in
    ``total``, ``by_rule`` and ``by_server``; ``held``: tools held for approval now, by
    server. ``start`` is the first minute's epoch second. Each replica reports only what it
    relayed itself. An unknown ``server`` is a 404.
    """
    if server is not None and server not in gateway.supervisors:
        raise HTTPException(404, f"no server named {server!r} runs here")
    snapshot = gateway.series.snapshot(minutes, server=server)
    held = gateway.held_tools()
    snapshot["held"] = held if server is None else {k: v for k, v in held.items() if k == server}
    return snapshot


class TicketOut(BaseModel):
    ticket: str = Field(description="Pass as ?ticket= to GET /events; good for opening one stream")
    expires_in: int = Field(description="Seconds the ticket can open a stream for")


@router.post("/events/ticket")
async def events_ticket(request: Request) -> TicketOut:
    """A ticket that opens ``GET /events`` for the next minute. A browser's ``EventSource``
    cannot send the ``Authorization`` header: it sends this in the address instead, so the
    admin token itself never appears in a URL (or an access log)."""
    token: str = request.app.state.admin_token
    return TicketOut(ticket=issue_ticket(token), expires_in=TICKET_SECS)


@router.get(
    "/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "Server-sent events"}},
)
async def events(gateway: GatewayDep) -> StreamingResponse:
    """Server-sent events: ``state`` (server, status, event, error), ``call`` (server, tool,
    outcome, ms, client, profile), ``finding`` (server, tool, rule, action, kind, where; never
    the value found), ``approval``, and ``lost`` (count) when this stream read too slowly and
    events were dropped. A comment line every 15 s keeps proxies from closing it. Needs the
    admin token as a bearer header or a ticket (``POST /events/ticket``) as ``?ticket=``."""
    return StreamingResponse(_stream(gateway.events), media_type="text/event-stream", headers=SSE_HEADERS)


async def _stream(hub: EventHub) -> AsyncIterator[bytes]:
    async with hub.subscribe() as subscription:
        yield b"retry: %d\n: connected\n\n" % RETRY_MS
        while True:
            event = await subscription.next(HEARTBEAT_SECS)
            if subscription.closed:
                return
            yield b": heartbeat\n\n" if event is None else event.sse()
