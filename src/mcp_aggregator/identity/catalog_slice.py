"""A profile's slice of the catalogue: the tools, prompts and resources it selects, with
its overrides applied. Pure; built once per catalogue version by the serve face.

Tools come from the gateway's own ``Catalog`` (after definition pinning, so a held tool is
never served through a profile either), keeping their exposed and canonical names; an
override's ``name`` replaces the exposed name. Prompts and resources are rebuilt from the
selected servers' listings, named as the whole catalogue would name them within the slice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import mcp_types as types

from mcp_aggregator.catalog import Catalog, CatalogEntry
from mcp_aggregator.catalog.feature_catalog import FeatureCatalog, ServerFeatures
from mcp_aggregator.identity.profile import Override, Profile

logger = logging.getLogger(__name__)


def slice_catalog(catalog: Catalog, profile: Profile, servers: Iterable[str] = ()) -> Catalog:
    """The tools of ``catalog`` in ``profile``, overrides applied. ``servers``: the known
    servers the slice still names (so a call to one that is offline says so)."""
    entries: list[CatalogEntry] = []
    taken = {entry.exposed for entry in catalog.entries}
    for entry in catalog.entries:
        if not profile.takes("tool", entry.server, entry.original_name):
            continue
        override = profile.overrides.get(entry.canonical)
        if override is not None:
            entry = _overridden(entry, override, taken)
        entries.append(entry)
    by_original: dict[str, list[CatalogEntry]] = {}
    for entry in entries:
        if override_name(profile, entry) is None:
            by_original.setdefault(entry.original_name, []).append(entry)
    known = {s for s in servers if profile.takes_server(s)} | {e.server for e in entries}
    return Catalog(
        entries=tuple(entries),
        servers=frozenset(known),
        _by_canonical={e.canonical: e for e in entries},
        _by_exposed={e.exposed: e for e in entries},
        _by_original={k: tuple(v) for k, v in by_original.items()},
    )


def override_name(profile: Profile, entry: CatalogEntry) -> str | None:
    override = profile.overrides.get(entry.canonical)
    return override.name if override is not None else None


def _overridden(entry: CatalogEntry, override: Override, taken: set[str]) -> CatalogEntry:
    exposed = entry.exposed
    if override.name is not None and override.name != entry.exposed:
        if override.name in taken:
            logger.warning(
                "override of %s: the name %r is taken by another tool; keeping %r",
                entry.canonical,
                override.name,
                exposed,
            )
        else:
            taken.discard(exposed)
            taken.add(override.name)
            exposed = override.name
    return CatalogEntry(entry.server, override.tool(entry.tool), entry.canonical, exposed)


def slice_features(
    listings: Mapping[str, ServerFeatures],
    profile: Profile,
    *,
    separator: str,
    max_length: int,
    keep_unique_names: bool,
) -> tuple[FeatureCatalog, frozenset[str]]:
    """The prompts, resources and templates of ``listings`` (exposed servers only) in
    ``profile``, and the servers they come from."""
    selected: dict[str, ServerFeatures] = {}
    for server, features in listings.items():
        prompts = tuple(p for p in features.prompts if profile.takes("prompt", server, p.name))
        resources = tuple(r for r in features.resources if profile.takes("resource", server, str(r.uri)))
        templates = tuple(t for t in features.templates if profile.takes("resource", server, t.uri_template))
        if prompts or resources or templates or profile.takes_server(server):
            selected[server] = ServerFeatures(prompts, resources, templates)
    built = FeatureCatalog.build(
        selected, separator=separator, max_length=max_length, keep_unique_names=keep_unique_names
    )
    return built, frozenset(selected)


def fingerprint(catalog: Catalog, features: FeatureCatalog) -> tuple[object, ...]:
    """What clients of a slice can see: equal fingerprints, nothing to notify."""
    tools: tuple[tuple[str, types.Tool], ...] = tuple((e.exposed, e.tool) for e in catalog.entries)
    return (tools, features.prompts, features.resources, features.templates)
