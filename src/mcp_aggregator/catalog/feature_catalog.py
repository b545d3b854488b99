"""Prompts, resources and resource templates of every exposed upstream, and routing over them.

The same three name forms as tools (seed 003 BR-005): the exposed name, the canonical
``server.name``, and the upstream's own name when exactly one exposed server has it. A
resource URI owned by one server is served unrewritten, so a client cannot tell the gateway
from the server; only a URI two servers share is namespaced (``aggregator+<server>:<uri>``,
or ``ui://aggregator+<server>/<rest>`` for an MCP Apps address: hosts render only ``ui://``).
Built once per discovery change; lookups are dictionary reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import mcp_types as types

from mcp_aggregator.catalog.naming import assign_exposed_names, namespace
from mcp_aggregator.errors import AmbiguousToolError, PromptNotFoundError, ResourceNotFoundError

RESOURCE_SCHEME = "aggregator+"
_UI_SCHEME = "ui://"
_UI_PREFIX = f"{_UI_SCHEME}{RESOURCE_SCHEME}"


@dataclass(frozen=True)
class ServerFeatures:
    """What one upstream listed besides tools."""

    prompts: tuple[types.Prompt, ...] = ()
    resources: tuple[types.Resource, ...] = ()
    templates: tuple[types.ResourceTemplate, ...] = ()


@dataclass(frozen=True)
class PromptRoute:
    server: str
    name: str
    """The upstream's own prompt name."""


@dataclass(frozen=True)
class ResourceRoute:
    server: str
    uri: str
    """The upstream's own URI."""


def prefixed_uri(server: str, uri: str) -> str:
    """``uri`` of ``server`` named apart from another server's same URI.

    A ``ui://`` address keeps its scheme (an MCP Apps host renders no other): the server goes
    into its authority, ``ui://clock/app.html`` of ``east`` becoming
    ``ui://aggregator+east/clock/app.html``.
    """
    if uri.startswith(_UI_SCHEME):
        return f"{_UI_PREFIX}{server}/{uri[len(_UI_SCHEME) :]}"
    return f"{RESOURCE_SCHEME}{server}:{uri}"


def split_prefixed_uri(uri: str) -> tuple[str, str] | None:
    """(server, the server's own URI) of a ``prefixed_uri``; None for any other URI."""
    if uri.startswith(_UI_PREFIX):
        server, slash, rest = uri[len(_UI_PREFIX) :].partition("/")
        return (server, f"{_UI_SCHEME}{rest}") if slash and server else None
    if not uri.startswith(RESOURCE_SCHEME):
        return None
    server, colon, original = uri[len(RESOURCE_SCHEME) :].partition(":")
    return (server, original) if colon and server else None


@lru_cache(maxsize=4096)
def template_pattern(template: str) -> re.Pattern[str]:
    """A regex for an RFC 6570 template: each ``{expr}`` matches one or more characters.

    Deliberately loose (a ``{+path}`` may span slashes, a plain ``{var}`` may not): it only
    decides which server owns a URI; the upstream parses it for real.
    """
    out = []
    for part in re.split(r"(\{[^}]*\})", template):
        if part.startswith("{") and part.endswith("}"):
            op = part[1:2]
            out.append(".+" if op in "+#/" and op else "[^/]+")
        else:
            out.append(re.escape(part))
    return re.compile("".join(out) + r"\Z")


@dataclass(frozen=True)
class FeatureCatalog:
    """An immutable snapshot of the prompts and resources clients can reach."""

    prompts: tuple[types.Prompt, ...] = ()
    resources: tuple[types.Resource, ...] = ()
    templates: tuple[types.ResourceTemplate, ...] = ()
    _prompt_routes: Mapping[str, PromptRoute] = field(default_factory=dict, repr=False)
    _prompt_by_original: Mapping[str, tuple[PromptRoute, ...]] = field(default_factory=dict, repr=False)
    _resource_routes: Mapping[str, tuple[ResourceRoute, ...]] = field(default_factory=dict, repr=False)
    _template_owners: tuple[tuple[str, str], ...] = ()

    @classmethod
    def build(
        cls,
        features: Mapping[str, ServerFeatures],
        *,
        separator: str = "__",
        max_length: int = 64,
        keep_unique_names: bool = False,
    ) -> FeatureCatalog:
        servers = sorted(features)
        pairs = [(s, p.name) for s in servers for p in features[s].prompts]
        exposed = assign_exposed_names(pairs, separator=separator, max_length=max_length, keep_unique=keep_unique_names)
        prompts: list[types.Prompt] = []
        routes: dict[str, PromptRoute] = {}
        by_original: dict[str, list[PromptRoute]] = {}
        owners: dict[str, list[str]] = {}
        for server in servers:
            for resource in features[server].resources:
                owners.setdefault(str(resource.uri), []).append(server)
        resource_routes: dict[str, list[ResourceRoute]] = {}
        resources: list[types.Resource] = []
        templates: list[types.ResourceTemplate] = []
        template_owners: list[tuple[str, str]] = []
        for server in servers:
            seen: set[str] = set()
            for prompt in features[server].prompts:
                if prompt.name in seen:
                    continue
                seen.add(prompt.name)
                route = PromptRoute(server, prompt.name)
                name = exposed[(server, prompt.name)]
                routes[name] = route
                routes.setdefault(namespace(server, prompt.name), route)
                by_original.setdefault(prompt.name, []).append(route)
                prompts.append(prompt.model_copy(update={"name": name}))
            for resource in features[server].resources:
                uri = str(resource.uri)
                resource_routes.setdefault(uri, []).append(ResourceRoute(server, uri))
                shown = uri if len(owners[uri]) == 1 else prefixed_uri(server, uri)
                resources.append(resource if shown == uri else resource.model_copy(update={"uri": shown}))
            for template in features[server].templates:
                templates.append(template)
                template_owners.append((server, template.uri_template))
        return cls(
            prompts=tuple(prompts),
            resources=tuple(resources),
            templates=tuple(templates),
            _prompt_routes=routes,
            _prompt_by_original={k: tuple(v) for k, v in by_original.items()},
            _resource_routes={k: tuple(v) for k, v in resource_routes.items()},
            _template_owners=tuple(template_owners),
        )

    def route_prompt(self, name: str) -> PromptRoute:
        """Exposed or canonical name, else the upstream's own name if exactly one server has it.

        Raises ``PromptNotFoundError`` or ``AmbiguousToolError`` (several servers, listed).
        """
        if (route := self._prompt_routes.get(name)) is not None:
            return route
        matches = self._prompt_by_original.get(name, ())
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise AmbiguousToolError(name, [m.server for m in matches], kind="prompt")
        raise PromptNotFoundError(name)

    def route_resource(self, uri: str, servers_with_resources: Sequence[str] = ()) -> ResourceRoute:
        """The server that owns ``uri``: prefixed form, a listed URI, then a template match.

        ``servers_with_resources`` (exposed servers declaring the capability) decides a URI
        nobody listed when exactly one server could own it. Raises ``ResourceNotFoundError``
        or ``AmbiguousToolError``.
        """
        if (split := split_prefixed_uri(uri)) is not None:
            return ResourceRoute(*split)
        listed = self._resource_routes.get(uri, ())
        if len(listed) == 1:
            return listed[0]
        if listed:
            raise AmbiguousToolError(uri, [r.server for r in listed], kind="resource")
        owners = sorted({s for s, t in self._template_owners if template_pattern(t).match(uri)})
        if len(owners) == 1:
            return ResourceRoute(owners[0], uri)
        if owners:
            raise AmbiguousToolError(uri, owners, kind="resource")
        if len(servers_with_resources) == 1:
            return ResourceRoute(servers_with_resources[0], uri)
        raise ResourceNotFoundError(uri)

    def route_template(self, uri_template: str) -> str | None:
        """The server that listed this template (for completion refs), when exactly one did."""
        owners = sorted({s for s, t in self._template_owners if t == uri_template})
        return owners[0] if len(owners) == 1 else None

    def shown_uri(self, server: str, uri: str) -> str:
        """How a URI of ``server`` is shown to clients (namespaced only when shared)."""
        return uri if len(self._resource_routes.get(uri, ())) <= 1 else prefixed_uri(server, uri)
