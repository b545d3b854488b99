"""``McpRegistries``: the configured MCP Registries, their stored copies, search and look-up.

Search answers from the stored copy, refreshing a registry first when its copy is older
than its ``refresh_secs`` (``updated_since``: only what changed); a registry that does not
answer is reported beside the results, which are then the copy last fetched. Looking up
an entry to install always asks the registry, so a deleted or replaced entry is seen.
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
    InstallInputError,
    McpRegistryError,
    RegistryError,
    RegistryUnreachableError,
)
from mcp_aggregator.mcp_registry.config import McpRegistrySource
from mcp_aggregator.mcp_registry.entry_store import EntryStore, StoredEntry
from mcp_aggregator.mcp_registry.registry_client import RegistryClient
from mcp_aggregator.mcp_registry.server_json import RegistryItem
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
        """Fetch what changed in ``source`` since the newest entry stored; the items stored.

        Raises ``RegistryUnreachableError``; ``RegistryError`` when the copy could not be
        written (another replica storing the same entries at the same moment).
        """
        async with self._refreshing:
            newest, _ = await self.store.last_update(source.name)
            async with RegistryClient(source, transport=self._transport) as client:
                items, skipped = await client.list_updates(newest)
            for line in skipped:
                logger.warning("registry %s: skipped an entry: %s", source.name, line)
            try:
                await self.store.save(source.name, items, now=self._clock())
            except SQLAlchemyError as exc:
                raise RegistryError(f"the copy of registry {source.name!r} was not stored: {exc}") from exc
        return len(items)

    async def search(self, text: str, *, registry: str | None = None, refresh: bool = True) -> SearchAnswer:
        sources = self._chosen(registry)
        problems = []
        for source in sources:
            _, fetched = await self.store.last_update(source.name)
            stale = fetched is None or (self._clock() - fetched).total_seconds() >= source.refresh_secs
            if refresh and stale:
                try:
                    await self.refresh(source)
                except (McpRegistryError, RegistryError) as exc:
                    when = f"the copy fetched {fetched.isoformat()}" if fetched else "no copy yet"
                    problems.append(f"{exc}; showing {when}")
        entries = await self.store.search(text, [s.name for s in sources])
        return SearchAnswer(entries, problems)

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
