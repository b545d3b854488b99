"""Typed configuration: parsed once, passed down as small sections."""

from mcp_aggregator.settings.env_expansion import SecretScrubber, expand_mapping, expand_value, secret_values
from mcp_aggregator.settings.loader import load_settings, parse_settings, settings_from_mapping
from mcp_aggregator.settings.security_settings import SecuritySettings
from mcp_aggregator.settings.serve_settings import (
    Exposure,
    FacadeGrouping,
    OAuthSettings,
    RateLimitSettings,
    ServeSettings,
)
from mcp_aggregator.settings.server_config import ServerConfig, Transport
from mcp_aggregator.settings.settings import Settings

__all__ = [
    "Exposure",
    "FacadeGrouping",
    "OAuthSettings",
    "RateLimitSettings",
    "SecretScrubber",
    "SecuritySettings",
    "ServeSettings",
    "ServerConfig",
    "Settings",
    "Transport",
    "expand_mapping",
    "expand_value",
    "load_settings",
    "parse_settings",
    "secret_values",
    "settings_from_mapping",
]
