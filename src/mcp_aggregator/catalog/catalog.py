"""The in-memory view of every upstream's tools, and routing over it (BR-005, BR-009)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import mcp_types as types

from mcp_aggregator.catalog.naming import assign_exposed_names, exposed_name, namespace
from mcp_aggregator.errors import AmbiguousToolError, ServerNotFoundError, ToolNotFoundError


class RouteStrategy(StrEnum):
    EXPLICIT_SERVER = "explicit_server"
    NAMESPACE_RESOLVED = "namespace_resolved"
    EXPOSED_NAME = "exposed_name"
    LOOKUP_RESOLVED = "lookup_resolved"


@dataclass(frozen=True)
class CatalogEntry:
    server: str
    tool: types.Tool
    canonical: str
    exposed: str

    @property
    def original_name(self) -> str:
        return self.tool.name


@dataclass(frozen=True)
class Route:
    server: str
    tool: str
    strategy: RouteStrategy
    entry: CatalogEntry | None = None


@dataclass(frozen=True)
class Catalog:
    """An immutable snapshot; a new one is built whenever discovery changes anything."""

    entries: tuple[CatalogEntry, ...] = ()
    servers: frozenset[str] = frozenset()
    _by_canonical: Mapping[str, CatalogEntry] = field(default_factory=dict, repr=False)
    _by_exposed: Mapping[str, CatalogEntry] = field(default_factory=dict, repr=False)
    _by_original: Mapping[str, tuple[CatalogEntry, ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls,
        tools_by_server: Mapping[str, Sequence[types.Tool]],
        *,
        separator: str = "__",
        max_length: int = 64,
        known_servers: Iterable[str] = (),
        keep_unique_names: bool = False,
        reuse: EntriesByServer | None = None,
    ) -> Catalog:
        """The catalogue of ``tools_by_server``.

        ``reuse``: the entries of each server from the last build, read and updated here. A
        server listing the same tool objects keeps its entries, when no two exposed names
        collide (then each is the name ``exposed_name`` gives its pair, as
        ``assign_exposed_names`` would). A start builds the catalogue at each of fifty
        connections, ten thousand entries each time.
        """
        by_server = None
        if reuse is not None and not keep_unique_names:
            by_server = _entries_reused(tools_by_server, reuse, separator, max_length)
            reuse.clear()
            # Kept only when each name is its pair's own: a salted one depends on the others.
            reuse.update(by_server or {})
        if by_server is None:
            by_server = _entries_named(tools_by_server, separator, max_length, keep_unique_names)
        entries = [entry for server in sorted(by_server) for entry in by_server[server][1]]
        by_original: dict[str, list[CatalogEntry]] = {}
        for entry in entries:
            by_original.setdefault(entry.original_name, []).append(entry)
        return cls(
            entries=tuple(entries),
            servers=frozenset(tools_by_server) | frozenset(known_servers),
            _by_canonical={e.canonical: e for e in entries},
            _by_exposed={e.exposed: e for e in entries},
            _by_original={k: tuple(v) for k, v in by_original.items()},
        )

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, name: str) -> CatalogEntry | None:
        """Look a tool up by canonical or exposed name."""
        return self._by_canonical.get(name) or self._by_exposed.get(name)

    def for_server(self, server: str) -> list[CatalogEntry]:
        return [e for e in self.entries if e.server == server]

    def only(self, servers: Collection[str]) -> list[CatalogEntry]:
        return [e for e in self.entries if e.server in servers]

    def resolve_route(self, name: str, server: str | None = None) -> Route:
        """Explicit server, then canonical/exposed name, then a unique original name.

        Raises ``ServerNotFoundError``, ``ToolNotFoundError`` or ``AmbiguousToolError``.
        """
        if server is not None:
            if server not in self.servers:
                raise ServerNotFoundError(server)
            entry = self._by_canonical.get(namespace(server, name))
            if entry is None and name.startswith(f"{server}."):
                entry = self._by_canonical.get(name)
            if entry is None:
                raise ToolNotFoundError(namespace(server, name))
            return Route(server, entry.original_name, RouteStrategy.EXPLICIT_SERVER, entry)
        if (entry := self._by_canonical.get(name)) is not None:
            return Route(entry.server, entry.original_name, RouteStrategy.NAMESPACE_RESOLVED, entry)
        if (entry := self._by_exposed.get(name)) is not None:
            return Route(entry.server, entry.original_name, RouteStrategy.EXPOSED_NAME, entry)
        matches = self._by_original.get(name, ())
        if len(matches) == 1:
            entry = matches[0]
            return Route(entry.server, entry.original_name, RouteStrategy.LOOKUP_RESOLVED, entry)
        if len(matches) > 1:
            raise AmbiguousToolError(name, [m.server for m in matches])
        raise ToolNotFoundError(name)


EntriesByServer = dict[str, tuple[tuple[types.Tool, ...], tuple[CatalogEntry, ...]]]
"""A server's tools as listed, and its catalogue entries."""


def _first_of_each_name(tools: Sequence[types.Tool]) -> list[types.Tool]:
    seen: set[str] = set()
    kept = []
    for tool in tools:
        if tool.name not in seen:  # an upstream listing one name twice: the first definition wins
            seen.add(tool.name)
            kept.append(tool)
    return kept


def _entries_named(
    tools_by_server: Mapping[str, Sequence[types.Tool]], separator: str, max_length: int, keep_unique: bool
) -> EntriesByServer:
    pairs = [(server, tool.name) for server, tools in tools_by_server.items() for tool in tools]
    names = assign_exposed_names(pairs, separator=separator, max_length=max_length, keep_unique=keep_unique)
    return {
        server: (
            tuple(tools),
            tuple(
                CatalogEntry(server, tool, namespace(server, tool.name), names[(server, tool.name)])
                for tool in _first_of_each_name(tools)
            ),
        )
        for server, tools in tools_by_server.items()
    }


def _entries_reused(
    tools_by_server: Mapping[str, Sequence[types.Tool]], reuse: EntriesByServer, separator: str, max_length: int
) -> EntriesByServer | None:
    """Each server's entries, kept or named on their own; None when two exposed names collide."""
    out: EntriesByServer = {}
    for server, tools in tools_by_server.items():
        kept = reuse.get(server)
        if kept is not None and len(kept[0]) == len(tools) and all(a is b for a, b in zip(kept[0], tools, strict=True)):
            out[server] = kept
            continue
        entries = tuple(
            CatalogEntry(
                server,
                tool,
                namespace(server, tool.name),
                exposed_name(server, tool.name, separator=separator, max_length=max_length),
            )
            for tool in _first_of_each_name(tools)
        )
        out[server] = (tuple(tools), entries)
    exposed = {entry.exposed for _, entries in out.values() for entry in entries}
    if len(exposed) != sum(len(entries) for _, entries in out.values()):
        return None
    return out
