"""``GET /metrics``: Prometheus text exposition format 0.0.4, written by hand."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from mcp_aggregator.admin.admin_gateway import GatewayDep
from mcp_aggregator.admin.server_views import ServerSample, collect_samples
from mcp_aggregator.credentials import AuthStatus
from mcp_aggregator.health.server_state import ServerStatus, is_exposed

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _family(name: str, help_text: str, samples: Sequence[tuple[str, float]], kind: str = "gauge") -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    lines.extend(f"{name}{labels} {_number(value)}" for labels, value in samples)
    return lines


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def render_metrics(
    servers: Sequence[ServerSample],
    total_tools: int,
    auth: Mapping[str, tuple[AuthStatus, int]] | None = None,
    guardrails: Mapping[tuple[str, str, str, str], int] | None = None,
    cache: Mapping[str, tuple[int, int]] | None = None,
    approvals: ApprovalCounts | None = None,
) -> str:
    """Pure: the exposition text. Every status appears, zero included, so dashboards see 0s.

    ``auth`` is, by server name, each OAuth upstream's sign-in status and failed refreshes;
    ``guardrails`` counts the guardrails' decisions by (rule, action, kind, where).
    ``cache``, by server name, the tool result cache's (hits, misses); ``approvals``, the calls
    held for a person now and the decisions since start.
    """
    cached = sorted((cache or {}).items())
    signed = sorted((auth or {}).items())
    by_status = Counter(server.status for server in servers)
    per_server = [(f'{{server="{escape_label(s.record.name)}"}}', s) for s in servers]
    lines = [
        *_family(
            "mcp_aggregator_servers",
            "Registered upstream servers by status.",
            [(f'{{status="{status.value}"}}', by_status[status]) for status in ServerStatus],
        ),
        *_family("mcp_aggregator_tools", "Tools in the registry.", [("", total_tools)]),
        *_family(
            "mcp_aggregator_server_up",
            "1 if the server serves calls (CONNECTED or DEGRADED).",
            [(labels, int(is_exposed(s.status))) for labels, s in per_server],
        ),
        *_family(
            "mcp_aggregator_server_tools",
            "Tools discovered on the server.",
            [(labels, s.record.tool_count) for labels, s in per_server],
        ),
        *_family(
            "mcp_aggregator_server_pending_requests",
            "Tool calls in flight to the server.",
            [(labels, s.pending_requests) for labels, s in per_server],
        ),
        *_family(
            "mcp_aggregator_tool_calls_total",
            "Tool calls routed to the server since start.",
            [(labels, s.calls) for labels, s in per_server],
            kind="counter",
        ),
        *_family(
            "mcp_aggregator_tool_call_errors_total",
            "Routed tool calls that failed (upstream error, timeout, lost session).",
            [(labels, s.call_errors) for labels, s in per_server],
            kind="counter",
        ),
        *_family(
            "mcp_aggregator_server_health_consecutive_failures",
            "Failed health checks since the last success.",
            [(labels, s.record.consecutive_failures) for labels, s in per_server],
        ),
        *_family(
            "mcp_aggregator_server_health_response_ms",
            "Latency of the last successful health check.",
            [(labels, s.record.response_time_ms) for labels, s in per_server if s.record.response_time_ms is not None],
        ),
        *_family(
            "mcp_aggregator_upstream_auth_refresh_failed",
            "1 if the OAuth upstream's tokens could not be refreshed (an admin must sign in again).",
            [(f'{{server="{escape_label(name)}"}}', int(st is AuthStatus.REFRESH_FAILED)) for name, (st, _) in signed],
        ),
        *_family(
            "mcp_aggregator_upstream_auth_signed_in",
            "1 if the gateway holds usable tokens for the OAuth upstream.",
            [(f'{{server="{escape_label(name)}"}}', int(st is AuthStatus.SIGNED_IN)) for name, (st, _) in signed],
        ),
        *_family(
            "mcp_aggregator_upstream_auth_refresh_failures_total",
            "Token refreshes the OAuth upstream's authorization server refused since start.",
            [(f'{{server="{escape_label(name)}"}}', failures) for name, (_, failures) in signed],
            kind="counter",
        ),
        *_family(
            "mcp_aggregator_tool_cache_hits_total",
            "Tool calls answered from the result cache since start.",
            [(f'{{server="{escape_label(name)}"}}', hits) for name, (hits, _) in cached],
            kind="counter",
        ),
        *_family(
            "mcp_aggregator_tool_cache_misses_total",
            "Calls to cacheable tools that the result cache could not answer since start.",
            [(f'{{server="{escape_label(name)}"}}', misses) for name, (_, misses) in cached],
            kind="counter",
        ),
        *_family(
            "mcp_aggregator_guardrail_decisions_total",
            "Guardrail decisions (mask, block, flag) since start, by rule, kind and where.",
            [
                (
                    f'{{rule="{escape_label(rule)}",action="{action}",kind="{kind}",where="{where}"}}',
                    count,
                )
                for (rule, action, kind, where), count in sorted((guardrails or {}).items())
            ],
            kind="counter",
        ),
        *_approval_families(approvals or ApprovalCounts(0, {}, 0.0)),
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ApprovalCounts:
    waiting: int
    decisions: Mapping[str, int]
    decision_seconds: float


def _approval_families(counts: ApprovalCounts) -> list[str]:
    decided = sum(counts.decisions.values())
    return [
        *_family(
            "mcp_aggregator_approvals_waiting", "Tool calls held for a person's approval now.", [("", counts.waiting)]
        ),
        *_family(
            "mcp_aggregator_approval_decisions_total",
            "Held calls decided since start, by outcome (approved, denied, expired, cancelled).",
            [(f'{{status="{status}"}}', counts.decisions.get(status, 0)) for status in _DECIDED],
            kind="counter",
        ),
        "# HELP mcp_aggregator_approval_decision_seconds Time from a call held to its decision.",
        "# TYPE mcp_aggregator_approval_decision_seconds summary",
        f"mcp_aggregator_approval_decision_seconds_sum {_number(counts.decision_seconds)}",
        f"mcp_aggregator_approval_decision_seconds_count {decided}",
    ]


_DECIDED = ("approved", "denied", "expired", "cancelled")


router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=PlainTextResponse)
async def metrics(gateway: GatewayDep) -> PlainTextResponse:
    """Prometheus gauges of servers, tools, in-flight calls and health; result cache counters."""
    samples = await collect_samples(gateway)
    total_tools = len(await gateway.registry.list_tools())
    auth = gateway.credentials.refresh_failures()
    counts = gateway.result_cache.cache
    cache = {name: (counts.hits[name], counts.misses[name]) for name in {*counts.hits, *counts.misses}}
    desk = gateway.approvals.desk
    approvals = ApprovalCounts(desk.waiting, dict(desk.decisions), desk.decision_seconds)
    text = render_metrics(samples, total_tools, auth, gateway.guard.counts, cache, approvals)
    return PlainTextResponse(text, media_type=CONTENT_TYPE)
