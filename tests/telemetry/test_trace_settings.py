"""Tracing is configured by the standard ``OTEL_*`` environment; off unless asked for."""

from __future__ import annotations

import pytest

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.telemetry import TraceSettings
from tests.conftest import settings_for


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"OTEL_TRACES_EXPORTER": "none"}, None),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, None),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, TraceSettings("otlp")),
        ({"OTEL_TRACES_EXPORTER": "console"}, TraceSettings("console")),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"},
            TraceSettings("otlp", "http/protobuf", "http://collector:4318/v1/traces"),
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            TraceSettings("otlp", "grpc", "http://collector:4317"),
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:9999/custom",
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
                "OTEL_SERVICE_NAME": "edge-gw",
            },
            TraceSettings("otlp", "http/protobuf", "http://traces:9999/custom", "edge-gw"),
        ),
    ],
)
def test_tracing_follows_the_otel_environment(env: dict[str, str], expected: TraceSettings | None) -> None:
    assert TraceSettings.from_env(env) == expected


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"),
        ({"OTEL_TRACES_EXPORTER": "otlp,console"}, "OTEL_TRACES_EXPORTER"),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"},
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        ),
    ],
)
def test_an_unsupported_exporter_or_protocol_is_refused_naming_the_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError, match=f"^{variable}: "):
        TraceSettings.from_env(env)


async def test_with_tracing_off_no_stage_is_installed_and_the_fast_path_stays() -> None:
    async with Gateway(settings_for(), env={}) as gateway:
        assert gateway.tracing is None
        assert gateway.pipeline.raw_ok


def test_a_gateway_refuses_a_wrong_otel_variable_at_start() -> None:
    with pytest.raises(ConfigError, match=r"^OTEL_TRACES_EXPORTER: 'jaeger' is not supported"):
        Gateway(settings_for(), env={"OTEL_TRACES_EXPORTER": "jaeger"})
