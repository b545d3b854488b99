"""mcp-aggregator: one MCP endpoint in front of many MCP servers.

The public names load on first use: a command that only talks to a running gateway
imports this package without paying for the gateway's parts (the SDK, SQLAlchemy, the
embedder's runtime).
"""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__version__ = "0.1.0"

__all__ = ["AggregatorError", "Gateway", "ServerConfig", "Settings", "__version__", "load_settings"]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "AggregatorError": ".errors",
        "Gateway": ".gateway",
        "ServerConfig": ".settings",
        "Settings": ".settings",
        "load_settings": ".settings",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.errors import AggregatorError
    from mcp_aggregator.gateway import Gateway
    from mcp_aggregator.settings import ServerConfig, Settings, load_settings
