"""The command line: run the gateway, and drive a running one through its REST API."""

import typing

# Not lazy: ``app`` is also the name of its module, which would hide it once imported.
from mcp_aggregator.cli.app import app, main
from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = ["GatewayClient", "GatewayTarget", "app", "main"]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "GatewayClient": ".gateway_client",
        "GatewayTarget": ".gateway_client",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.cli.gateway_client import GatewayClient, GatewayTarget
