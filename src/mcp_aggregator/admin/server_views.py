"""Domain records (plus the live supervisor) as API bodies; secrets never leave redacted."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_aggregator.admin.admin_gateway import AdminGateway
from mcp_aggregator.admin.schemas import OriginPublic, SandboxHintPublic, ServerDetail, ServerPublic, ToolPublic
from mcp_aggregator.catalog.tool_pin_book import pin_of
from mcp_aggregator.credentials import AuthStatus
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.registry import ServerRecord, ToolPinRecord, ToolRecord, redact_connection_config, redact_url
from mcp_aggregator.sandbox.hidden_paths import SandboxHint
from mcp_aggregator.sandbox.sandbox_policy import effective
from mcp_aggregator.settings import Transport
from mcp_aggregator.upstreams.server_supervisor import ServerSupervisor

Scrub = Callable[[str], str]


def tool_public(tool: ToolRecord) -> ToolPublic:
    return ToolPublic(
        id=tool.id,
        name=tool.name,
        original_name=tool.original_name,
        description=tool.description,
        input_schema=tool.input_schema,
        server_id=tool.source_server_id,
        skill_ids=list(tool.skill_ids),
        primary_skill_id=tool.primary_skill_id,
        is_classified=tool.is_classified,
    )


def tools_with_pins(
    server: ServerRecord,
    tools: Sequence[ToolRecord],
    pins: Sequence[ToolPinRecord] | None,
    reasons: Callable[[str, dict[str, Any]], list[str]] = lambda server, definition: [],
) -> list[ToolPublic]:
    """The served tools with their pin state, then the held ones with both definitions.

    ``pins`` is ``None`` when pinning is off. A held tool is not in the registry's tool list
    (it is not served), so its entry is built from the pending definition; ``reasons`` says
    why a guardrail holds it (server name, pending definition).
    """
    out = [tool_public(tool) for tool in tools]
    if pins is None:
        return out
    by_name = {pin.tool_name: pin for pin in pins}
    for index, tool in enumerate(out):
        pin = by_name.get(tool.original_name)
        if pin is not None:
            out[index] = tool.model_copy(update={"pin_status": "approved", "approved_definition": pin.definition})
    for pin in pins:
        if pin.pending_definition is None:
            continue
        pending = pin.pending_definition
        out.append(
            ToolPublic(
                id=f"held:{server.id}:{pin.tool_name}",
                name=f"{server.name}.{pin.tool_name}",
                original_name=pin.tool_name,
                description=pending.get("description"),
                input_schema=pending.get("inputSchema") or {},
                server_id=server.id,
                skill_ids=[],
                primary_skill_id=None,
                is_classified=False,
                pin_status=pin_of(pin)[1].status.value,
                approved_definition=pin.definition,
                pending_definition=pending,
                hold_reasons=reasons(server.name, pending),
            )
        )
    return out


def server_public(
    record: ServerRecord,
    supervisor: ServerSupervisor | None,
    tools: Sequence[ToolRecord] | None = None,
    *,
    scrub: Scrub = str,
    auth_status: AuthStatus = AuthStatus.NOT_REQUIRED,
    tool_count: int | None = None,
) -> ServerPublic:
    """The record, with what this process knows live taken from its supervisor (status, error,
    failures, last health check) and ``tool_count`` (the tools it discovered; None: the
    record's). The registry receives them write-behind and can trail by a moment, by a minute
    in a start of thousands of tools: an answer never waits for those writes.

    Error texts can quote upstream output or URLs: ``scrub`` hides the servers' secrets.
    """
    error = supervisor.error_message if supervisor else record.error_message
    checked = supervisor.last_health_check if supervisor else None
    return ServerPublic(
        id=record.id,
        name=record.name,
        status=supervisor.status if supervisor else record.status,
        transport_type=record.transport_type,
        tool_count=record.tool_count if tool_count is None else tool_count,
        registered_at=record.registered_at,
        last_health_check=checked or record.last_health_check,
        consecutive_failures=supervisor.consecutive_failures if supervisor else record.consecutive_failures,
        response_time_ms=supervisor.response_time_ms if supervisor and checked else record.response_time_ms,
        error_message=scrub(error) if error else None,
        auth_status=auth_status,
        tools=None if tools is None else [tool_public(tool) for tool in tools],
        origin=_origin(record),
        stderr_tail=[scrub(line) for line in supervisor.stderr_tail] if supervisor else [],
    )


def _origin(record: ServerRecord) -> OriginPublic | None:
    origin = record.connection_config.get("origin")
    if not isinstance(origin, dict):
        return None
    return OriginPublic(registry=origin["registry"], name=origin["name"], version=origin["version"])


def server_detail(
    record: ServerRecord,
    supervisor: ServerSupervisor | None,
    *,
    scrub: Scrub = str,
    auth_status: AuthStatus = AuthStatus.NOT_REQUIRED,
    tool_count: int | None = None,
) -> ServerDetail:
    public = server_public(record, supervisor, scrub=scrub, auth_status=auth_status, tool_count=tool_count)
    connection = supervisor.connection if supervisor else None
    last_error = (supervisor.last_error if supervisor else None) or record.last_error
    return ServerDetail(
        **public.model_dump(),
        description=record.description,
        health_check_url=redact_url(record.health_check_url) if record.health_check_url else None,
        connected_at=(supervisor.connected_at if supervisor else None) or record.connected_at,
        last_error=scrub(last_error) if last_error else None,
        connection_config=redact_connection_config(record.connection_config),
        source=record.source.value,
        pending_requests=connection.pending_requests if connection else 0,
        era=connection.era.to_json() if connection else None,
        sandbox=sandbox_view(supervisor) if supervisor else None,
        sandbox_hints=[_hint(hint, scrub) for hint in supervisor.sandbox_hints] if supervisor else [],
    )


def _hint(hint: SandboxHint, scrub: Scrub) -> SandboxHintPublic:
    return SandboxHintPublic(path=scrub(hint.path), access=hint.access, given_as=hint.given_as, grant=scrub(hint.grant))


def sandbox_view(supervisor: ServerSupervisor) -> dict[str, Any] | None:
    """A stdio server's sandbox: as its last start applied it (the network after a fallback,
    grants resolved, the working directory it may read), else its settings merged with the
    gateway's; what that start could not confine, and the limit that ended it; None for
    HTTP/SSE servers."""
    if supervisor.config.transport is not Transport.STDIO:
        return None
    if supervisor.sandbox is None:
        return {"enabled": False, "warnings": ["this gateway starts servers without sandboxes"], "limit_hit": None}
    applied = supervisor.sandbox_applied
    view = (
        dict(applied)
        if applied is not None
        else effective(supervisor.sandbox.defaults, supervisor.config.sandbox).summary()
    )
    view["active"] = supervisor.sandbox_active
    view["warnings"] = list(supervisor.sandbox_warnings)
    view["limit_hit"] = supervisor.limit_hit
    return view


@dataclass(frozen=True, slots=True)
class ServerSample:
    """One server as state and metrics see it: its record, live status and in-flight calls."""

    record: ServerRecord
    status: ServerStatus
    pending_requests: int
    calls: int = 0
    call_errors: int = 0


async def collect_samples(gateway: AdminGateway) -> list[ServerSample]:
    """Every registered server, with the live figures of this process's supervisor if any.

    Read without waiting for the registry's write-behind: the figures it would bring are
    taken live (see ``server_public``)."""
    samples = []
    for record in await gateway.registry.list_servers():
        supervisor = gateway.supervisors.get(record.name)
        connection = supervisor.connection if supervisor else None
        samples.append(
            ServerSample(
                record=record,
                status=supervisor.status if supervisor else record.status,
                pending_requests=connection.pending_requests if connection else 0,
                calls=supervisor.calls if supervisor else 0,
                call_errors=supervisor.call_errors if supervisor else 0,
            )
        )
    return samples
