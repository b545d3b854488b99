"""An OTLP/HTTP receiver for the proxy bench's traced gateway: takes span batches at
``/v1/traces``, answers as a collector does, keeps nothing.

    python bench/otlp_sink.py --port 4318
"""

from __future__ import annotations

import argparse

import uvicorn
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

_ANSWER = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()


async def traces(request: Request) -> Response:
    await request.body()
    return Response(_ANSWER, media_type="application/x-protobuf")


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/healthz", healthz)])
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="off")


if __name__ == "__main__":
    main()
