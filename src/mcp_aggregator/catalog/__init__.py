"""Discovery results as an in-memory catalog: namespacing, exposed names, routing."""

from mcp_aggregator.catalog.catalog import Catalog, CatalogEntry, Route, RouteStrategy
from mcp_aggregator.catalog.naming import (
    CLIENT_SAFE,
    assign_exposed_names,
    exposed_name,
    namespace,
    parse_namespaced,
)

__all__ = [
    "CLIENT_SAFE",
    "Catalog",
    "CatalogEntry",
    "Route",
    "RouteStrategy",
    "assign_exposed_names",
    "exposed_name",
    "namespace",
    "parse_namespaced",
]
