"""Discovery results as an in-memory catalog: namespacing, exposed names, routing."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

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

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "Catalog": ".catalog",
        "CatalogEntry": ".catalog",
        "Route": ".catalog",
        "RouteStrategy": ".catalog",
        "CLIENT_SAFE": ".naming",
        "assign_exposed_names": ".naming",
        "exposed_name": ".naming",
        "namespace": ".naming",
        "parse_namespaced": ".naming",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.catalog.catalog import Catalog, CatalogEntry, Route, RouteStrategy
    from mcp_aggregator.catalog.naming import (
        CLIENT_SAFE,
        assign_exposed_names,
        exposed_name,
        namespace,
        parse_namespaced,
    )
