"""Converting between a validated ``ServerConfig`` and what the registry stores."""

from __future__ import annotations

from mcp_aggregator.registry import ServerRecord, ServerSpec, TransportType
from mcp_aggregator.settings.server_config import ServerConfig, Transport


def spec_from_config(config: ServerConfig) -> ServerSpec:
    return ServerSpec(
        name=config.name,
        transport_type=TransportType(config.transport.value.upper()),
        connection_config=config.connection_config(),
        description=config.description,
        health_check_url=config.health_check_url,
        enabled=config.enabled,
    )


def config_from_record(record: ServerRecord) -> ServerConfig:
    """Rebuild the config of an API-registered server (validated again, so a bad row fails loudly)."""
    data = {
        "name": record.name,
        "transport": Transport(record.transport_type.value.lower()),
        "description": record.description,
        "health_check_url": record.health_check_url,
        **record.connection_config,
    }
    return ServerConfig.model_validate(data)
