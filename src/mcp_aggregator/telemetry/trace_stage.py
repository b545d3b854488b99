"""``TraceStage``: a span per relayed request by the OpenTelemetry MCP semantic conventions,
and a child span for the upstream call whose context goes upstream in ``_meta.traceparent``.

The request's span (kind SERVER) is named ``{mcp.method.name} {target}`` and continues the
client's trace: its W3C context comes from the request's ``_meta.traceparent`` or, failing
that, the HTTP ``traceparent`` header. The upstream call's span (kind CLIENT) is current
while the request goes out, so ``outgoing_meta`` puts its context in the upstream
request's ``_meta`` (replacing the client's). Installed only when tracing is on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mcp_types as types
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from mcp_aggregator.audit.audit_entry import Outcome, outcome_of
from mcp_aggregator.relay.caller import Caller
from mcp_aggregator.relay.pipeline import Invocation, Next

_PROPAGATOR: Final = TraceContextTextMapPropagator()
_TRACE_KEYS: Final = ("traceparent", "tracestate")
TOOL_ERROR: Final = "tool_error"
"""``error.type`` of a tool call whose result has ``isError`` (semantic conventions)."""


def client_context(caller: Caller) -> Context | None:
    """The client's trace context: ``_meta.traceparent`` (and ``tracestate``), else the HTTP
    ``traceparent`` header; None when the client sent neither (the span starts a trace)."""
    meta: Mapping[str, Any] = caller.meta or {}
    carrier = {key: meta[key] for key in _TRACE_KEYS if isinstance(meta.get(key), str)}
    if "traceparent" not in carrier:
        if caller.traceparent is None:
            return None
        carrier = {"traceparent": caller.traceparent}
    return _PROPAGATOR.extract(carrier)


def outgoing_meta(meta: types.RequestParamsMeta | None) -> types.RequestParamsMeta | None:
    """``meta`` with the current span's W3C context as ``traceparent`` / ``tracestate``."""
    carrier: dict[str, Any] = {k: v for k, v in (meta or {}).items() if k not in _TRACE_KEYS}
    _PROPAGATOR.inject(carrier)
    return carrier  # type: ignore[return-value]


def request_attributes(invocation: Invocation) -> dict[str, str]:
    """The MCP semantic conventions' attributes of a request span (and a few of our own)."""
    caller = invocation.caller
    attributes = {"mcp.method.name": invocation.method}
    if invocation.method == "tools/call":
        attributes["gen_ai.tool.name"] = invocation.target
        attributes["gen_ai.operation.name"] = "execute_tool"
    elif invocation.method == "prompts/get":
        attributes["gen_ai.prompt.name"] = invocation.target
    elif invocation.method.startswith("resources/"):
        attributes["mcp.resource.uri"] = invocation.target
    if caller.session_id is not None:
        attributes["mcp.session.id"] = caller.session_id
    if caller.request_id is not None:
        attributes["jsonrpc.request.id"] = str(caller.request_id)
    if caller.http_request_id is not None:
        attributes["mcp_aggregator.request_id"] = caller.http_request_id
    attributes["mcp_aggregator.server"] = invocation.server
    attributes["mcp_aggregator.profile"] = caller.identity.profile
    client = caller.identity.name if caller.identity.name is not None else caller.origin
    if client is not None:
        attributes["mcp_aggregator.client"] = client
    return attributes


class TraceStage:
    """See the module docstring."""

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer

    async def __call__(self, invocation: Invocation, send: Next) -> Any:
        name = f"{invocation.method} {invocation.target}"
        attributes = request_attributes(invocation)
        tracer = self._tracer
        with (
            tracer.start_as_current_span(
                name,
                context=client_context(invocation.caller),
                kind=SpanKind.SERVER,
                attributes=attributes,
                record_exception=False,
                set_status_on_exception=False,
            ) as request_span,
            tracer.start_as_current_span(
                name,
                kind=SpanKind.CLIENT,
                attributes=attributes,
                record_exception=False,
                set_status_on_exception=False,
            ) as upstream_span,
        ):
            try:
                result = await send()
            except BaseException as exc:
                error_type = type(exc).__qualname__
                for span in (upstream_span, request_span):
                    span.set_attribute("error.type", error_type)
                    span.set_status(Status(StatusCode.ERROR))  # no text: it may quote secrets
                raise
            if outcome_of(result) is Outcome.ERROR:
                for span in (upstream_span, request_span):
                    span.set_attribute("error.type", TOOL_ERROR)
                    span.set_status(Status(StatusCode.ERROR))
            return result
