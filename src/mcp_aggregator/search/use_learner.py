"""``UseLearner``: a search followed by a call of one of its hits teaches search (opt-in).

With ``search.learn_from_use`` the facade's ``tools search`` tells the learner which tools
it returned to which session, and ``tools execute`` which tool that session then ran. When
the tool was among the session's recent hits, the (query, tool) pair is stored in the
registry's database and the query becomes a view the tool is ranked by (``UseViews``).
Pairs older than ``learn_from_use_retention_days`` are purged at start and then hourly, and
the views reloaded, so a purge (``mcp-aggregator tools forget-uses``) reaches a running
gateway within the hour. Query text is kept, which is why this is off by default.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import anyio
import anyio.abc

from mcp_aggregator.errors import RegistryError
from mcp_aggregator.search.tool_search import ToolSearch
from mcp_aggregator.search.use_store import UseStore

SESSION_MEMORY = timedelta(minutes=30)
"""How long a search counts as the reason for a later call in the same session."""
SEARCHES_PER_SESSION = 8
SESSIONS = 1024
"""Sessions remembered at once, least recently active dropped first."""
PURGE_EVERY = timedelta(hours=1)

log = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


class UseLearner:
    """See the module docstring. ``searched`` is pure bookkeeping; ``executed`` and ``refresh``
    touch the database (``RegistryError``) and the search index."""

    def __init__(
        self,
        search: ToolSearch,
        store: UseStore,
        retention: timedelta,
        *,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._search = search
        self._store = store
        self._retention = retention
        self._clock = clock
        self._recent: OrderedDict[str, deque[tuple[datetime, str, frozenset[str]]]] = OrderedDict()
        self._lock = anyio.Lock()

    def searched(self, session: str, query: str, keys: Sequence[str]) -> None:
        """Remembers that ``session`` was shown ``keys`` for ``query``."""
        if not keys:
            return
        searches = self._recent.pop(session, None) or deque(maxlen=SEARCHES_PER_SESSION)
        searches.append((self._clock(), query, frozenset(keys)))
        self._recent[session] = searches
        while len(self._recent) > SESSIONS:
            self._recent.popitem(last=False)

    def query_for(self, session: str, key: str) -> str | None:
        """The latest recent query of ``session`` whose hits included ``key``, if any."""
        horizon = self._clock() - SESSION_MEMORY
        for time, query, keys in reversed(self._recent.get(session, ())):
            if time >= horizon and key in keys:
                return query
        return None

    async def executed(self, session: str, key: str) -> bool:
        """Learns from ``session`` running ``key``; whether a (query, tool) pair was stored."""
        query = self.query_for(session, key)
        if query is None:
            return False
        async with self._lock:  # a refresh in between would drop the new view
            await self._store.add(self._clock(), query, key)
            await self._search.add_uses([(query, key)])
        return True

    async def refresh(self) -> int:
        """Purges the pairs past retention and reloads the views from the database; returns
        how many pairs search now learns from."""
        async with self._lock:
            now = self._clock()
            await self._store.purge(now - self._retention)
            uses = await self._store.since(now - self._retention)
            self._search.clear_uses()
            await self._search.add_uses(uses)
        return len(uses)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Loads the views, then purges and reloads every ``PURGE_EVERY``; started with
        ``tg.start`` so the gateway does not wait for the first load (it embeds every past
        query not in the embedding cache). A database error is logged and retried next time."""
        task_status.started()
        while True:
            try:
                loaded = await self.refresh()
                log.debug("search learns from %d past uses", loaded)
            except RegistryError as exc:
                log.error("search: cannot load past uses: %s", str(exc)[:500])
            await anyio.sleep(PURGE_EVERY.total_seconds())
