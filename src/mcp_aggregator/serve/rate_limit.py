"""``RateLimit``: a per-client request budget on ``/mcp`` and the REST API (429 past it).

Built on the ``limits`` library's sliding-window counters: two windows, ``burst`` requests
per ``burst / rate`` seconds and ``requests_per_minute`` per minute, give the shape of a
token bucket (a burst, then a steady refill) without a clock of our own. ``limits`` is
maintained, typed, async, and its storage is pluggable (memory here; Redis would let
replicas share budgets).
"""

from __future__ import annotations

import hashlib
import json
import math
import time

from limits import RateLimitItem, RateLimitItemPerMinute, RateLimitItemPerSecond
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import SlidingWindowCounterRateLimiter
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_aggregator.settings.serve_settings import RateLimitSettings

RATE_LIMITED = -32029
"""JSON-RPC code of the 429 answer on ``/mcp`` (server-defined range)."""


def client_key(scope: Scope) -> str:
    """The presented bearer token (hashed: the key may be logged or stored), else the address."""
    authorization = dict(scope["headers"]).get(b"authorization")
    if authorization:
        return "token:" + hashlib.sha256(authorization).hexdigest()[:32]
    client = scope.get("client")
    return f"addr:{client[0] if client else 'unknown'}"


def is_limited_path(path: str) -> bool:
    return path == "/mcp" or path.startswith(("/mcp/", "/api/"))


class RateLimit:
    """Pure ASGI middleware; paths outside ``/mcp`` and ``/api/`` pass untouched."""

    def __init__(self, app: ASGIApp, *, settings: RateLimitSettings) -> None:
        self.app = app
        self.settings = settings
        burst = settings.burst_size
        burst_secs = max(1, math.ceil(burst * 60 / settings.requests_per_minute))
        self._items: tuple[RateLimitItem, ...] = (
            RateLimitItemPerSecond(burst, burst_secs),
            RateLimitItemPerMinute(settings.requests_per_minute),
        )
        # A sliding-window counter keeps two counters per client and window, whatever the
        # limit; a moving window would keep a timestamp per request.
        self._limiter = SlidingWindowCounterRateLimiter(MemoryStorage())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_limited_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        key = client_key(scope)
        for item in self._items:
            # ``hit`` counts and checks atomically, so concurrent requests cannot overdraw.
            if not await self._limiter.hit(item, key):
                await self._refuse(scope, send, await self._retry_after(item, key))
                return
        await self.app(scope, receive, send)

    async def _retry_after(self, item: RateLimitItem, key: str) -> int:
        stats = await self._limiter.get_window_stats(item, key)
        return max(1, math.ceil(stats.reset_time - time.time()))

    async def _refuse(self, scope: Scope, send: Send, retry_after: int) -> None:
        s = self.settings
        message = (
            f"rate limit exceeded ({s.requests_per_minute} requests per minute, burst {s.burst_size}); "
            f"retry after {retry_after} s"
        )
        if scope["path"].startswith("/mcp"):
            payload: object = {"jsonrpc": "2.0", "id": None, "error": {"code": RATE_LIMITED, "message": message}}
        else:
            payload = {"detail": message}
        body = json.dumps(payload).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 429,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(retry_after).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
