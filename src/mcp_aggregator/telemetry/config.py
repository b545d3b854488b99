"""``TraceSettings``: OpenTelemetry tracing as the standard ``OTEL_*`` environment asks for it.

Tracing is on when ``OTEL_TRACES_EXPORTER`` names an exporter (``otlp`` or ``console``), or,
with it unset, when an OTLP endpoint is given (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_ENDPOINT``); ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``
keep it off. Read once at start: with tracing off, nothing of it is on any call's path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from mcp_aggregator.errors import ConfigError

Exporter = Literal["otlp", "console"]
Protocol = Literal["http/protobuf", "grpc"]

DEFAULT_SERVICE_NAME: Final = "mcp-aggregator"
_EXPORTERS: Final = ("otlp", "console")
_PROTOCOLS: Final = ("http/protobuf", "grpc")


@dataclass(frozen=True)
class TraceSettings:
    """Where spans go. ``endpoint`` None: the exporter's own default (``localhost:4318`` or ``:4317``)."""

    exporter: Exporter
    protocol: Protocol = "http/protobuf"
    endpoint: str | None = None
    service_name: str = DEFAULT_SERVICE_NAME

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TraceSettings | None:
        """The settings ``env`` asks for, or None when tracing is off.

        Raises ``ConfigError`` naming the variable for an exporter or protocol this
        gateway does not speak.
        """
        if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return None
        traces_endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        base_endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        named = [part.strip() for part in env.get("OTEL_TRACES_EXPORTER", "").split(",") if part.strip()]
        if not named:
            named = ["otlp"] if traces_endpoint or base_endpoint else ["none"]
        if named == ["none"]:
            return None
        exporter = named[0]
        if len(named) > 1 or exporter not in _EXPORTERS:
            raise ConfigError(
                f"{env.get('OTEL_TRACES_EXPORTER')!r} is not supported; use one of otlp, console, none",
                path="OTEL_TRACES_EXPORTER",
            )
        protocol_var = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
        protocol = env.get(protocol_var, "").strip()
        if not protocol:
            protocol_var = "OTEL_EXPORTER_OTLP_PROTOCOL"
            protocol = env.get(protocol_var, "").strip() or "http/protobuf"
        if protocol not in _PROTOCOLS:
            raise ConfigError(f"{protocol!r} is not supported; use http/protobuf or grpc", path=protocol_var)
        endpoint = traces_endpoint or None
        if endpoint is None and base_endpoint:
            # The signal path is appended to the base endpoint for HTTP only (OTLP exporter spec).
            endpoint = base_endpoint.rstrip("/") + "/v1/traces" if protocol == "http/protobuf" else base_endpoint
        service = env.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE_NAME
        return cls(exporter, protocol, endpoint, service)  # type: ignore[arg-type]
