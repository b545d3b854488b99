"""An OTLP receiver for tests on 127.0.0.1: HTTP/protobuf (``/v1/traces``) and gRPC, decoded
with ``opentelemetry-proto``; it keeps every span it is sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
import grpc
import uvicorn
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mcp_aggregator.serve.runner import bind_socket

DEADLINE_SECS = 30


@dataclass
class ReceivedSpan:
    service: str
    span: Span

    @property
    def name(self) -> str:
        return self.span.name

    @property
    def attributes(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for kv in self.span.attributes:
            out[kv.key] = getattr(kv.value, kv.value.WhichOneof("value") or "string_value")
        return out


@dataclass
class OtlpReceiver:
    url: str = ""
    spans: list[ReceivedSpan] = field(default_factory=list)
    _arrived: anyio.Event = field(default_factory=anyio.Event)

    def take(self, request: trace_service_pb2.ExportTraceServiceRequest) -> None:
        for resource_spans in request.resource_spans:
            service = next(
                (kv.value.string_value for kv in resource_spans.resource.attributes if kv.key == "service.name"), ""
            )
            for scope_spans in resource_spans.scope_spans:
                self.spans.extend(ReceivedSpan(service, span) for span in scope_spans.spans)
        self._arrived.set()
        self._arrived = anyio.Event()

    async def wait_for(self, count: int) -> list[ReceivedSpan]:
        with anyio.fail_after(DEADLINE_SECS):
            while len(self.spans) < count:
                await self._arrived.wait()
        return self.spans


@asynccontextmanager
async def otlp_http_receiver() -> AsyncIterator[OtlpReceiver]:
    receiver = OtlpReceiver()

    async def traces(request: Request) -> Response:
        receiver.take(trace_service_pb2.ExportTraceServiceRequest.FromString(await request.body()))
        body = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        return Response(body, media_type="application/x-protobuf")

    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    sock = bind_socket("127.0.0.1", 0)
    receiver.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(server.serve, sockets=[sock]))
        try:
            yield receiver
        finally:
            server.should_exit = True
    sock.close()


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: OtlpReceiver) -> None:
        self.receiver = receiver

    async def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        self.receiver.take(request)
        return trace_service_pb2.ExportTraceServiceResponse()


@asynccontextmanager
async def otlp_grpc_receiver() -> AsyncIterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    server = grpc.aio.server()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceService(receiver), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    receiver.url = f"http://127.0.0.1:{port}"
    try:
        yield receiver
    finally:
        await server.stop(None)
