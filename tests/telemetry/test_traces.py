"""Spans by the OpenTelemetry MCP semantic conventions reach an OTLP receiver (HTTP/protobuf
and gRPC), in the client's trace (``traceparent`` header or ``_meta``), and the upstream is
handed the trace context of the gateway's call to it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.relay import Caller
from tests.audit.test_audit_request_ids import CallIds
from tests.audit.test_audit_through_gateway import DEADLINE, TOKEN, audit_items
from tests.conftest import settings_for
from tests.http_serving import ServedGateway, served_over_http
from tests.relay.test_mrtr_through_gateway import upstream
from tests.telemetry.otlp_receiver import OtlpReceiver, ReceivedSpan, otlp_grpc_receiver, otlp_http_receiver

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
META_TRACE = "0af7651916cd43dd8448eb211c80319c"
META_SPAN = "b7ad6b7169203331"


def traceparent(trace_id: str, span_id: str) -> str:
    return f"00-{trace_id}-{span_id}-01"


@asynccontextmanager
async def traced_gateway(
    monkeypatch: pytest.MonkeyPatch, receiver: OtlpReceiver, protocol: str, admin_token: str | None = None
) -> AsyncIterator[ServedGateway]:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "gateway-under-test")
    settings = settings_for(upstream("garbled", "tests.upstream.garbled_server"))
    async with served_over_http(settings, admin_token=admin_token) as served:
        assert served.gateway.tracing is not None
        yield served


def upstream_meta(result: Any) -> dict[str, Any]:
    seen: dict[str, Any] = json.loads(result.content[0].text)
    return seen


def one(spans: list[ReceivedSpan], name: str, kind: int, trace_id: str) -> ReceivedSpan:
    [found] = [s for s in spans if s.name == name and s.span.kind == kind and s.span.trace_id.hex() == trace_id]
    return found


async def test_spans_continue_the_clients_trace_and_the_upstream_gets_the_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with otlp_http_receiver() as receiver, traced_gateway(monkeypatch, receiver, "http/protobuf") as served:
        gateway = served.gateway
        http = httpx2.AsyncClient(headers={"traceparent": traceparent(CLIENT_TRACE, CLIENT_SPAN)})
        async with (
            http,
            Client(streamable_http_client(served.mcp_url, http_client=http), mode="legacy", cache=None) as client,
        ):
            by_header = upstream_meta(await client.call_tool("garbled__meta", {}))
            meta = {"traceparent": traceparent(META_TRACE, META_SPAN)}
            by_meta = upstream_meta(await client.call_tool("garbled__meta", {}, meta=meta))  # type: ignore[arg-type]
            with pytest.raises(MCPError):
                await client.call_tool("garbled__refuse", {"message": "no"})
        assert gateway.tracing is not None and await gateway.tracing.flush()
        spans = await receiver.wait_for(6)

    server = one(spans, "tools/call meta", Span.SPAN_KIND_SERVER, CLIENT_TRACE)
    assert server.service == "gateway-under-test"
    assert server.span.parent_span_id.hex() == CLIENT_SPAN
    attributes = server.attributes
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "meta"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["jsonrpc.request.id"]
    assert attributes["mcp.session.id"]
    assert "error.type" not in attributes
    call = one(spans, "tools/call meta", Span.SPAN_KIND_CLIENT, CLIENT_TRACE)
    assert call.span.parent_span_id == server.span.span_id
    # The upstream continues the trace from the gateway's call span, not from the client's.
    assert by_header["traceparent"] == traceparent(CLIENT_TRACE, call.span.span_id.hex())

    from_meta = one(spans, "tools/call meta", Span.SPAN_KIND_SERVER, META_TRACE)
    assert from_meta.span.parent_span_id.hex() == META_SPAN
    meta_call = one(spans, "tools/call meta", Span.SPAN_KIND_CLIENT, META_TRACE)
    assert by_meta["traceparent"] == traceparent(META_TRACE, meta_call.span.span_id.hex())

    refused = one(spans, "tools/call refuse", Span.SPAN_KIND_SERVER, CLIENT_TRACE)
    assert refused.attributes["error.type"] == "UpstreamCallError"
    assert refused.span.status.code == refused.span.status.STATUS_CODE_ERROR


async def test_spans_reach_an_otlp_grpc_receiver_and_a_call_without_context_starts_a_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with otlp_grpc_receiver() as receiver, traced_gateway(monkeypatch, receiver, "grpc") as served:
        gateway: Gateway = served.gateway
        result = await gateway.pipeline.call_tool("garbled__meta", {}, caller=Caller(request_id=9))
        seen = upstream_meta(result)
        assert gateway.tracing is not None and await gateway.tracing.flush()
        spans = await receiver.wait_for(2)
    [server] = [s for s in spans if s.span.kind == Span.SPAN_KIND_SERVER]
    assert server.span.parent_span_id == b""
    assert server.attributes["jsonrpc.request.id"] == "9"
    assert seen["traceparent"].split("-")[1] == server.span.trace_id.hex()


async def test_with_tracing_on_the_fast_path_steps_aside(monkeypatch: pytest.MonkeyPatch) -> None:
    async with otlp_http_receiver() as receiver, traced_gateway(monkeypatch, receiver, "http/protobuf") as served:
        assert not served.gateway.pipeline.raw_ok
        async with Client(served.mcp_url, cache=None) as client:  # type: ignore[arg-type]
            await client.call_tool("garbled__echo", {"text": "x"})
        assert served.gateway.tracing is not None and await served.gateway.tracing.flush()
        spans = await receiver.wait_for(2)
    assert {s.name for s in spans} == {"tools/call echo"}


async def test_the_span_carries_the_http_request_id_the_response_and_the_audit_have(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with (
        otlp_http_receiver() as receiver,
        traced_gateway(monkeypatch, receiver, "http/protobuf", admin_token=TOKEN) as served,
    ):
        gateway = served.gateway
        ids = CallIds()
        for headers in ({"X-Request-Id": "abc-123"}, {}):
            http = httpx2.AsyncClient(headers=headers, event_hooks={"response": [ids]})
            async with http, Client(streamable_http_client(served.mcp_url, http_client=http), cache=None) as client:
                await client.call_tool("garbled__echo" if headers else "garbled__meta", {"text": "x"})
        assert gateway.tracing is not None and await gateway.tracing.flush()
        spans = await receiver.wait_for(4)
        assert gateway.audit is not None
        with anyio.fail_after(DEADLINE):
            await gateway.audit.flush()
        [made] = [i for i in ids.seen if i != "abc-123"]
        audited = {i["tool"]: i["request_id"] for i in (await audit_items(served.base, request_id=made))["items"]}
        audited |= {i["tool"]: i["request_id"] for i in (await audit_items(served.base, request_id="abc-123"))["items"]}

    assert ids.seen == ["abc-123", made] and len(made) == 16
    server = {s.name: s.attributes for s in spans if s.span.kind == Span.SPAN_KIND_SERVER}
    assert server["tools/call echo"]["mcp_aggregator.request_id"] == "abc-123"
    assert server["tools/call meta"]["mcp_aggregator.request_id"] == made
    assert server["tools/call meta"]["jsonrpc.request.id"], "the JSON-RPC id is kept beside it"
    assert audited == {"echo": "abc-123", "meta": made}
