"""``Tracing``: the gateway's own OpenTelemetry tracer provider and exporter.

The provider is the gateway's, not the process-wide global one, so a gateway's spans go
where its settings say and a second gateway in the same process (tests) has its own.
Spans are exported in batches from the SDK's worker thread; ``shutdown`` sends what is left.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import anyio
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import Tracer

from mcp_aggregator.extras import OTEL_GRPC, require_extra
from mcp_aggregator.relay.pipeline import MetaHook, Stage
from mcp_aggregator.telemetry.config import TraceSettings
from mcp_aggregator.telemetry.trace_stage import TraceStage, outgoing_meta

INSTRUMENTATION: Final = "mcp_aggregator"


def _exporter(settings: TraceSettings) -> SpanExporter:
    if settings.exporter == "console":
        return ConsoleSpanExporter()
    if settings.protocol == "grpc":
        # An extra, imported on first use: only a gateway that exports over gRPC pays for grpcio.
        grpc = require_extra(
            "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
            extra=OTEL_GRPC,
            feature="OTLP export over gRPC (OTEL_EXPORTER_OTLP_PROTOCOL=grpc)",
        )
        exporter: SpanExporter = grpc.OTLPSpanExporter(endpoint=settings.endpoint)
        return exporter
    return HttpExporter(endpoint=settings.endpoint)


class Tracing:
    """A tracer provider exporting to where ``settings`` say; ``shutdown`` once at the end."""

    def __init__(self, settings: TraceSettings, *, version: str = "") -> None:
        self.settings = settings
        attributes = {SERVICE_NAME: settings.service_name}
        if version:
            attributes[SERVICE_VERSION] = version
        self.provider = TracerProvider(resource=Resource.create(attributes))
        self.provider.add_span_processor(BatchSpanProcessor(_exporter(settings)))
        self.tracer: Tracer = self.provider.get_tracer(INSTRUMENTATION, version or None)
        self.stage: Stage = TraceStage(self.tracer)
        self.outgoing_meta: MetaHook = outgoing_meta
        """Puts the upstream call's span context in the ``_meta`` of the request going upstream."""

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, version: str = "") -> Tracing | None:
        """Tracing as the ``OTEL_*`` variables of ``env`` ask for, or None when it is off.

        Raises ``ConfigError`` naming the variable that is wrong.
        """
        settings = TraceSettings.from_env(env)
        return None if settings is None else cls(settings, version=version)

    async def flush(self) -> bool:
        """Export every finished span now (in a worker thread); False when that timed out."""
        return await anyio.to_thread.run_sync(self.provider.force_flush)

    async def shutdown(self) -> None:
        """Export what is left and stop the exporter's thread."""
        await anyio.to_thread.run_sync(self.provider.shutdown)
