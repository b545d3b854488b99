"""Upstreams that are not MCP servers, each served by an in-process MCP server of its own.

``transport: openapi`` (a REST API from its OpenAPI document) and ``transport: a2a`` (an
A2A agent from its agent card) become a low-level SDK ``Server`` that the gateway's ordinary
upstream connection talks to in-process; everything past that connection treats them as any
MCP server. ``open_bridge`` builds one for a server's configuration.
"""

from mcp_aggregator.bridges.bridge_target import OpenBridge, RawAnswer, open_bridge

__all__ = ["OpenBridge", "RawAnswer", "open_bridge"]
