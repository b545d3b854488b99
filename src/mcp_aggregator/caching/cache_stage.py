"""``ResultCacheStage``: the pipeline stage that answers a cacheable ``tools/call`` from the
``ResultCache`` and keeps the successful results of the others.

It sits after the policy stages (a refused call is never answered from the cache) and
before per-user tokens (a hit signs nobody in). Kept only: a ``CallToolResult`` without
``isError`` (a JSON-RPC error is raised, so never reaches the cache), of a call that did
not ask the client back (the caller's ``asked`` count did not move) and was not the retry
of one (``Invocation.resumed``). The fast path declines every cacheable tool (see
``FastCalls``), so the calls it settles by callback have nothing here to run: the stage is
an ``ErrorStage`` with nothing to do on an error, which keeps the fast path's callback lane.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Final

import mcp_types as types

from mcp_aggregator.caching.config import ResultCacheConfig
from mcp_aggregator.caching.result_cache import ResultCache, Scope, cache_key
from mcp_aggregator.errors import UpstreamError
from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.relay.pipeline import Invocation, Next

_TOOLS_CALL: Final = "tools/call"

ConfigFor = Callable[[str], ResultCacheConfig | None]
"""A server's ``cache:`` section (None: nothing of it is cached)."""

served_from_cache: ContextVar[bool] = ContextVar("mcp_aggregator_served_from_cache", default=False)
"""Set in the call's task when the stage answered from the cache: the audit, which wraps
the stage, reads it to say ``cached``."""


def scope_of(identity: ClientIdentity) -> Scope:
    """The part of a client's identity its cached results are kept under."""
    return (identity.profile, identity.name, identity.subject)


class ResultCacheStage:
    """See the module docstring; ``config_for`` is read per call, so a server's new config
    applies at once."""

    def __init__(self, cache: ResultCache, config_for: ConfigFor) -> None:
        self.cache = cache
        self._config_for = config_for

    def config(self, server: str, tool: str) -> ResultCacheConfig | None:
        """The cache section that covers ``tool`` of ``server``; None when it is not cacheable."""
        config = self._config_for(server)
        return config if config is not None and config.covers(tool) else None

    async def __call__(self, invocation: Invocation, send: Next) -> Any:
        if invocation.method != _TOOLS_CALL or invocation.resumed:
            return await send()
        config = self.config(invocation.server, invocation.target)
        if config is None:
            return await send()
        caller = invocation.caller
        key = cache_key(invocation.server, invocation.target, invocation.arguments, scope_of(caller.identity))
        hit = self.cache.get(key)
        if hit is not None:
            served_from_cache.set(True)
            return hit
        asked = caller.asked.count
        result = await send()
        if isinstance(result, types.CallToolResult) and not result.is_error and caller.asked.count == asked:
            size = len(result.__pydantic_serializer__.to_json(result, by_alias=True, exclude_none=True))
            self.cache.put(key, result, config.ttl_secs, size)
        return result

    def on_error(self, invocation: Invocation, exc: UpstreamError) -> None:
        """Nothing: an error is never cached (see the module docstring)."""
