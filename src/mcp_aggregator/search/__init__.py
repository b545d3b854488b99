"""Semantic tool search: embedders, vector and lexical indexes, hybrid ranking, skills."""

from mcp_aggregator.search.build import build_embedder, build_tool_search
from mcp_aggregator.search.config import SearchSettings, SkillSpec
from mcp_aggregator.search.embedder import Embedder
from mcp_aggregator.search.tool_doc import SearchHit, SearchResults, ToolDoc
from mcp_aggregator.search.tool_search import ToolSearch
from mcp_aggregator.search.vector_index import VectorIndex

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
