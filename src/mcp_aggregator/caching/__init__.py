"""Opt-in tool result caching: ``ResultCache`` (the pure core), ``ResultCacheStage`` (its
place in the call pipeline) and ``ResultCacheConfig`` (a server's ``cache:`` section)."""

from mcp_aggregator.caching.cache_stage import ResultCacheStage, served_from_cache
from mcp_aggregator.caching.config import ResultCacheConfig
from mcp_aggregator.caching.result_cache import CacheKey, ResultCache, cache_key

__all__ = ["CacheKey", "ResultCache", "ResultCacheConfig", "ResultCacheStage", "cache_key", "served_from_cache"]
