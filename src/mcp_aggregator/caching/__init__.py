"""Opt-in tool result caching: ``ResultCache`` (the pure core) and ``ResultCacheConfig`` (a
server's ``cache:`` section). The pipeline stage is ``cache_stage.ResultCacheStage``, imported
from its module: settings read this package, and the stage reads the relay, which reads settings."""

from mcp_aggregator.caching.config import ResultCacheConfig
from mcp_aggregator.caching.result_cache import CacheKey, ResultCache, cache_key

__all__ = ["CacheKey", "ResultCache", "ResultCacheConfig", "cache_key"]
