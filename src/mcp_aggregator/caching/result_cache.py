"""``ResultCache``: the pure core of the tool result cache — keys, expiry, a size bound.

No I/O and no clock of its own (``clock`` is injected, monotonic seconds), so expiry is
tested without sleeping. The cache holds at most ``max_bytes`` of results (each result's
size as its JSON, told by the caller) and ``max_entries`` of them: past either, the least
recently used are evicted until it fits. A result larger than ``max_bytes`` alone is not
kept at all (it would evict everything else and then itself).
"""

from __future__ import annotations

import json
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

Clock = Callable[[], float]
Scope = tuple[str, str | None, str | None]
"""A client's scope: its profile, name and per-user subject (anonymous clients of one
profile share theirs)."""
MAX_ENTRIES: Final = 10_000
MAX_BYTES: Final = 128 << 20


@dataclass(frozen=True, slots=True)
class CacheKey:
    """What makes two calls the same call: the tool, its arguments as canonical JSON, and
    the client's ``Scope``."""

    server: str
    tool: str
    arguments: bytes
    scope: Scope


def canonical_arguments(arguments: Mapping[str, Any] | None) -> bytes:
    """The arguments as JSON with sorted keys: equal however the client ordered them."""
    if not arguments:
        return b"{}"
    try:
        return orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        # A lone surrogate is not valid UTF-8 for orjson; the stdlib escapes it.
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=repr).encode()


def cache_key(server: str, tool: str, arguments: Mapping[str, Any] | None, scope: Scope) -> CacheKey:
    return CacheKey(server, tool, canonical_arguments(arguments), scope)


class ResultCache:
    """Results by ``CacheKey``, each until its own deadline; hits and misses by server."""

    def __init__(
        self, clock: Clock = time.monotonic, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES
    ) -> None:
        self._clock = clock
        self._max = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[CacheKey, tuple[float, object, int]] = OrderedDict()
        self.bytes = 0
        """The sizes of the results held, together."""
        self.hits: Counter[str] = Counter()
        self.misses: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey) -> object | None:
        """The live result under ``key`` (counted as a hit, and now the most recently used),
        else None (a miss)."""
        found = self._entries.get(key)
        if found is not None:
            deadline, result, _ = found
            if self._clock() < deadline:
                self.hits[key.server] += 1
                self._entries.move_to_end(key)
                return result
            self._drop(key)
        self.misses[key.server] += 1
        return None

    def put(self, key: CacheKey, result: object, ttl_secs: float, size: int) -> bool:
        """Keep ``result`` (``size``: its length as JSON) for ``ttl_secs``; False when it is
        larger than the whole budget and is not kept."""
        if key in self._entries:
            self._drop(key)
        if size > self.max_bytes:
            return False
        self._entries[key] = (self._clock() + ttl_secs, result, size)
        self.bytes += size
        while len(self._entries) > self._max or self.bytes > self.max_bytes:
            _, (_, _, evicted) = self._entries.popitem(last=False)
            self.bytes -= evicted
        return True

    def forget(self, server: str) -> None:
        """Drop every result of ``server`` (its tools changed, or it went away)."""
        for key in [k for k in self._entries if k.server == server]:
            self._drop(key)

    def _drop(self, key: CacheKey) -> None:
        _, _, size = self._entries.pop(key)
        self.bytes -= size
