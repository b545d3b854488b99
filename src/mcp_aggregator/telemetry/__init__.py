"""OpenTelemetry traces of the gateway's requests, configured by the ``OTEL_*`` environment.

``Tracing`` loads with its first use: the OpenTelemetry SDK and its OTLP exporter (protobuf)
cost every start several MB of RSS, and tracing is off unless the environment asks for it.
"""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports
from mcp_aggregator.telemetry.config import TraceSettings

__all__ = ["TraceSettings", "Tracing"]

__getattr__, __dir__ = _lazy_exports(globals(), {"Tracing": ".tracing"})

if typing.TYPE_CHECKING:
    from mcp_aggregator.telemetry.tracing import Tracing
