"""OpenTelemetry traces of the gateway's requests, configured by the ``OTEL_*`` environment."""

from mcp_aggregator.telemetry.config import TraceSettings
from mcp_aggregator.telemetry.tracing import Tracing

__all__ = ["TraceSettings", "Tracing"]
