"""Opt-in tool result caching: ``ResultCache`` (the pure core) and ``ResultCacheConfig`` (a
server's ``cache:`` section). The pipeline stage is ``cache_stage.ResultCacheStage``, imported
from its module: settings read this package, and the stage reads the relay, which reads settings."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = ["CacheKey", "ResultCache", "ResultCacheConfig", "cache_key"]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "ResultCacheConfig": ".config",
        "CacheKey": ".result_cache",
        "ResultCache": ".result_cache",
        "cache_key": ".result_cache",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.caching.config import ResultCacheConfig
    from mcp_aggregator.caching.result_cache import CacheKey, ResultCache, cache_key
