"""``McpRegistries``: the configured MCP Registries, their stored copies, search and look-up.

Search answers from the stored copy, refreshing a registry first when its last listing is
older than its ``refresh_secs`` (``updated_since``: only what changed, once a full listing
has finished; see ``registry_sync``); a registry that does not answer is reported beside
the results, which are then the copy last fetched, and is asked again only after a
back-off. Looking up an entry to install always asks the registry, so a deleted or
replaced entry is seen; what it finds is stored but moves no listing's state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import anyio
import httpx
from sqlalchemy.exc import SQLAlchemyError

from mcp_aggregator.errors import (
    EntryNotFoundError,
    InstallError,
    InstallInputError,
    RegistryError,
    RegistryUnreachableError,
)
from mcp_aggregator.installs.config import McpRegistrySource
from mcp_aggregator.installs.entry_store import EntryStore, StoredEntry
from mcp_aggregator.installs.registry_client import RegistryClient
from mcp_aggregator.installs.registry_sync import SyncState
from mcp_aggregator.installs.server_json import RegistryItem
from mcp_aggregator.registry import Registry

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class SearchAnswer:
    entries: list[StoredEntry]
    problems: list[str] = field(default_factory=list)
    """One line per registry that could not be refreshed (its stored copy was used)."""


class McpRegistries:
    def __init__(
        self,
        sources: tuple[McpRegistrySource, ...],
        registry: Registry,
        *,
        clock: Clock = lambda: datetime.now(UTC),
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.sources = {source.name: source for source in sources}
        self.store = EntryStore(registry)
        self._clock = clock
        self._transport = transport
        self._refreshing = anyio.Lock()

    def _chosen(self, registry: str | None) -> list[McpRegistrySource]:
        if not self.sources:
            raise InstallInputError(["registries: no MCP Registry is configured (registries: in the configuration)"])
        if registry is None:
            return list(self.sources.values())
        if registry not in self.sources:
            known = ", ".join(self.sources) or "none"
            raise InstallInputError([f"registry: no registry named {registry!r} is configured (registries: {known})"])
        return [self.sources[registry]]

    async def refresh(self, source: McpRegistrySource) -> int:
        """List what changed in ``source`` since the last listing (everything until a full
        one has finished) into the copy; the items stored.

        Raises ``RegistryUnreachableError`` (the failure recorded, for the back-off);
        ``RegistryError`` when the copy could not be written (another replica storing the
        same entries at the same moment).
        """
        async with self._refreshing:
            return await self._refresh(source, await self._state(source))

    async def _refresh(self, source: McpRegistrySource, state: SyncState) -> int:
        now = self._clock()
        try:
            async with RegistryClient(source, transport=self._transport) as client:
                items, skipped = await client.list_updates(state.since)
        except InstallError as exc:
            try:
                await self.store.record_failure(source.name, now=now, error=str(exc))
            except SQLAlchemyError as db_exc:
                logger.warning("registry %s: its failure was not recorded: %s", source.name, db_exc)
            raise
        for line in skipped:
            logger.warning("registry %s: skipped an entry: %s", source.name, line)
        try:
            await self.store.save_listing(source.name, items, now=now)
        except SQLAlchemyError as exc:
            raise RegistryError(f"the copy of registry {source.name!r} was not stored: {exc}") from exc
        return len(items)

    async def _state(self, source: McpRegistrySource) -> SyncState:
        try:
            return await self.store.sync_state(source.name)
        except SQLAlchemyError as exc:
            raise RegistryError(f"the copy of registry {source.name!r} could not be read: {exc}") from exc

    async def _refresh_if_due(self, source: McpRegistrySource) -> SyncState:
        """The state after refreshing ``source`` if it is due; raises as ``refresh``."""
        async with self._refreshing:
            # Read under the lock: a search that waited here finds the copy another one just refreshed.
            state = await self._state(source)
            if state.due(self._clock(), source.refresh_secs):
                await self._refresh(source, state)
                state = await self._state(source)
            return state

    async def search(self, text: str, *, registry: str | None = None, refresh: bool = True) -> SearchAnswer:
        sources = self._chosen(registry)
        problems = []
        for source in sources:
            try:
                state = await (self._refresh_if_due(source) if refresh else self._state(source))
            except (InstallError, RegistryError) as exc:
                problems.append(f"{exc}; showing {_copy_of(await self._state_or_none(source))}")
                continue
            retry = state.retry_at(source.refresh_secs)
            if retry is not None:
                # Still failing, and not asked again until the back-off ends.
                problems.append(
                    f"{state.last_error} (asked again after {retry.isoformat()}); showing {_copy_of(state)}"
                )
        entries = await self.store.search(text, [s.name for s in sources])
        return SearchAnswer(entries, problems)

    async def _state_or_none(self, source: McpRegistrySource) -> SyncState | None:
        try:
            return await self._state(source)
        except RegistryError:
            return None

    async def look_up(self, name: str, version: str | None, *, registry: str | None = None) -> tuple[str, RegistryItem]:
        """(registry name, item) from the first registry that has it, asked live.

        Raises ``EntryNotFoundError`` naming the registries asked, ``RegistryUnreachableError``
        when one that might have it did not answer.
        """
        sources = self._chosen(registry)
        unreachable: RegistryUnreachableError | None = None
        for source in sources:
            try:
                async with RegistryClient(source, transport=self._transport) as client:
                    item = await client.get_version(name, version)
            except EntryNotFoundError:
                continue
            except RegistryUnreachableError as exc:
                unreachable = unreachable or exc
                continue
            await self.store.save(source.name, [item], now=self._clock())
            return source.name, item
        if unreachable is not None:
            raise unreachable
        raise EntryNotFoundError(name, ", ".join(s.name for s in sources), version)


def _copy_of(state: SyncState | None) -> str:
    listed = state.listed_at if state is not None else None
    return f"the copy fetched {listed.isoformat()}" if listed else "no copy yet"
