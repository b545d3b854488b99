"""Typed configuration: parsed once, passed down as small sections."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

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

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "SecretScrubber": ".env_expansion",
        "expand_mapping": ".env_expansion",
        "expand_value": ".env_expansion",
        "secret_values": ".env_expansion",
        "load_settings": ".loader",
        "parse_settings": ".loader",
        "settings_from_mapping": ".loader",
        "SecuritySettings": ".security_settings",
        "Exposure": ".serve_settings",
        "FacadeGrouping": ".serve_settings",
        "OAuthSettings": ".serve_settings",
        "RateLimitSettings": ".serve_settings",
        "ServeSettings": ".serve_settings",
        "ServerConfig": ".server_config",
        "Transport": ".server_config",
        "Settings": ".settings",
    },
)

if typing.TYPE_CHECKING:
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
