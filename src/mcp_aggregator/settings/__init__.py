"""Typed configuration: parsed once, passed down as small sections."""

from mcp_aggregator.settings.env_expansion import expand_mapping, expand_value
from mcp_aggregator.settings.loader import load_settings, parse_settings, settings_from_mapping
from mcp_aggregator.settings.serve_settings import Exposure, FacadeGrouping, ServeSettings
from mcp_aggregator.settings.server_config import ServerConfig, Transport
from mcp_aggregator.settings.settings import Settings

__all__ = [
    "Exposure",
    "FacadeGrouping",
    "ServeSettings",
    "ServerConfig",
    "Settings",
    "Transport",
    "expand_mapping",
    "expand_value",
    "load_settings",
    "parse_settings",
    "settings_from_mapping",
]
