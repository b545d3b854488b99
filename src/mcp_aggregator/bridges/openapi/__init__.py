"""OpenAPI documents as tools: ``OpenApiBridge`` (the server), ``read_operations`` (the pure core)."""

from mcp_aggregator.bridges.openapi.openapi_bridge import OpenApiBridge
from mcp_aggregator.bridges.openapi.operation_reader import read_operations

__all__ = ["OpenApiBridge", "read_operations"]
