"""The command line: run the gateway, and drive a running one through its REST API."""

from mcp_aggregator.cli.app import app, main
from mcp_aggregator.cli.gateway_client import GatewayClient, GatewayTarget

__all__ = ["GatewayClient", "GatewayTarget", "app", "main"]
