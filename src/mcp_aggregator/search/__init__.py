"""Semantic tool search: embedders, vector and lexical indexes, hybrid ranking, skills."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = [
    "Embedder",
    "SearchHit",
    "SearchResults",
    "SearchSettings",
    "SkillSpec",
    "ToolDoc",
    "ToolSearch",
    "VectorIndex",
    "build_embedder",
    "build_tool_search",
]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "build_embedder": ".build",
        "build_tool_search": ".build",
        "SearchSettings": ".config",
        "SkillSpec": ".config",
        "Embedder": ".embedder",
        "SearchHit": ".tool_doc",
        "SearchResults": ".tool_doc",
        "ToolDoc": ".tool_doc",
        "ToolSearch": ".tool_search",
        "VectorIndex": ".vector_index",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.search.build import build_embedder, build_tool_search
    from mcp_aggregator.search.config import SearchSettings, SkillSpec
    from mcp_aggregator.search.embedder import Embedder
    from mcp_aggregator.search.tool_doc import SearchHit, SearchResults, ToolDoc
    from mcp_aggregator.search.tool_search import ToolSearch
    from mcp_aggregator.search.vector_index import VectorIndex
