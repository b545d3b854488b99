"""Choosing what clients see, by the ``serve.exposure`` setting.

Every mode lists the contract tool ``mcp__proxy__aggregator__query`` first (code mode without
its output schema), then:

* ``facades`` (default): the ``tools``, ``servers`` and ``aggregator`` domains, ``files`` when
  ``serve.workspace_roots`` is set, then (with ``serve.upstream_domains``) one domain per
  exposed server — or per skill with ``facade_grouping: skill`` — sorted by name;
* ``passthrough``: every upstream tool under its exposed name, in catalog order;
* ``search``: the ``tools`` domain only;
* ``code``: the ``tools`` domain's ``search``/``list``/``get`` (tools written as Python
  signatures) and ``run_code``, which runs a script calling tools in the sandbox.

Upstream domains follow the catalog: they are rebuilt when ``gateway.catalog`` is a new
object (or, grouped by skill, when a tool's skill changed) and reused otherwise; grouped by
server, only the domains of servers whose tools changed are built again.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from mcp_aggregator.aggregate import QUERY_TOOL_NAME, query_tool
from mcp_aggregator.catalog import Catalog, CatalogEntry
from mcp_aggregator.code_mode.run_code_tool import run_code, run_code_tool
from mcp_aggregator.code_mode.signature import tool_signature
from mcp_aggregator.facades import (
    Domain,
    RoundtripStore,
    UpstreamCall,
    build_aggregator_domain,
    build_files_domain,
    build_servers_domain,
    build_tools_domain,
    build_upstream_domain,
    to_call_tool_result,
)
from mcp_aggregator.facades.config import FacadeSettings
from mcp_aggregator.facades.records import ToolRecord
from mcp_aggregator.identity import DEFAULT_PROFILE
from mcp_aggregator.serve.featured_surface import FeaturedSurface
from mcp_aggregator.serve.gateway_views import (
    GatewayQueryRunner,
    GatewayServers,
    GatewayToolCatalog,
    primary_skill,
)
from mcp_aggregator.serve.profile_gateway import profile_of
from mcp_aggregator.serve.serve_gateway import ServeGateway
from mcp_aggregator.serve.tool_surface import (
    CallRequest,
    CombinedSurface,
    PassthroughSurface,
    StaticSurface,
    ToolHandler,
    ToolSurface,
)
from mcp_aggregator.settings.serve_settings import Exposure, FacadeGrouping

logger = logging.getLogger(__name__)

CORE_DOMAINS = ("tools", "servers", "aggregator", "files")
RESERVED_NAMES = frozenset({*CORE_DOMAINS, QUERY_TOOL_NAME})
"""Names an upstream domain never takes, whichever core domains are switched on, so a
server's domain name does not change with unrelated settings."""
GENERAL_SKILL = "general"
SERVER_SUFFIX = "_server"
SKILL_SUFFIX = "_skill"
MAX_TOOL_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def build_surface(gateway: ServeGateway, exposure: Exposure | None = None) -> ToolSurface:
    """The tools clients see under ``gateway.settings.serve``, in ``exposure`` (default:
    ``serve.exposure``; a profile may choose its own)."""
    serve = gateway.settings.serve
    exposure = serve.exposure if exposure is None else exposure
    query = query_tool_surface(gateway)
    if exposure is Exposure.PASSTHROUGH:
        return CombinedSurface([query, PassthroughSurface(gateway)])
    if exposure is Exposure.CODE:
        return CombinedSurface([query_tool_surface(gateway, output_schema=False), code_surface(gateway)])
    tools = build_tools_domain(GatewayToolCatalog(gateway))
    if exposure is Exposure.SEARCH:
        return CombinedSurface([query, FacadeSurface([tools])])
    core = [
        tools,
        build_servers_domain(GatewayServers(gateway)),
        build_aggregator_domain(GatewayQueryRunner(gateway)),
    ]
    if serve.workspace_roots:
        core.append(build_files_domain(RoundtripStore(list(serve.workspace_roots))))
    settings = gateway.settings.facades
    reworded(core, settings)
    upstream = UpstreamDomains(gateway, serve.facade_grouping) if serve.upstream_domains else None
    facades = FacadeSurface(core, upstream, upstream_max_chars=serve.upstream_domains_max_chars)
    if not settings.lists_tools:
        return CombinedSurface([query, facades])
    profile = profile_of(gateway)
    featured = FeaturedSurface(gateway, settings, profile.name if profile is not None else DEFAULT_PROFILE)
    # After the facades: a featured tool never takes a facade's name.
    return CombinedSurface([query, facades, featured])


def reworded(domains: Sequence[Domain], settings: FacadeSettings) -> None:
    """Give the facades the operator's descriptions (``facades.descriptions``), before their
    definitions are first made."""
    for domain in domains:
        if (text := settings.descriptions.get(domain.name)) is not None:
            domain.description = text


# -- the aggregator contract tool (seed 000) --------------------------------------------------


def query_tool_surface(gateway: ServeGateway, *, output_schema: bool = True) -> StaticSurface:
    """The contract tool. ``InvalidQueryError`` / ``AggregationFailedError`` propagate, so
    ``GatewayServer`` answers them with JSON-RPC -32602 / -32603 and their ``data``.

    ``output_schema=False`` (code mode) lists it without its output schema, which is two
    thirds of that listing: its answer is the same self-describing JSON either way, and a
    code-mode model spends its listing on writing scripts, not on this tool."""

    async def call(arguments: dict[str, Any], request: CallRequest) -> types.CallToolResult:
        answer = await gateway.query(arguments)
        text = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=answer)

    return StaticSurface([(query_tool(output_schema=output_schema), call)])


# -- code mode --------------------------------------------------------------------------------

CODE_COMMANDS = ("search", "list", "get")


def script_signature(tool: ToolRecord) -> str:
    """The tool headed by the name ``call_tool`` takes (``server.tool``)."""
    return tool_signature(tool.name, tool.input_schema, tool.output_schema)


def code_surface(gateway: ServeGateway) -> ToolSurface:
    """``tools`` (find a tool and its signature) and ``run_code`` (a script calling tools);
    a script's calls go through the pipeline as the client that sent it."""
    tools = build_tools_domain(GatewayToolCatalog(gateway), signature=script_signature, commands=CODE_COMMANDS)

    async def call(arguments: dict[str, Any], request: CallRequest) -> types.CallToolResult:
        return await run_code(gateway.sandbox, gateway.pipeline, arguments, request.caller)

    return CombinedSurface([FacadeSurface([tools]), StaticSurface([(run_code_tool(gateway.sandbox), call)])])


# -- facade domains ---------------------------------------------------------------------------


class FacadeSurface:
    """Fixed core domains, then the upstream domains of the moment; one tool per domain."""

    def __init__(
        self, core: Sequence[Domain], upstream: UpstreamDomains | None = None, *, upstream_max_chars: int = 12_000
    ) -> None:
        self._core = tuple(core)
        self._upstream = upstream
        self._upstream_max_chars = upstream_max_chars
        self._seen: tuple[Domain, ...] | None = None
        self._tools: tuple[types.Tool, ...] = ()
        self._by_name: dict[str, Domain] = {}
        self._defined: dict[int, tuple[Domain, types.Tool, int]] = {}
        """By ``id`` of a domain (held here, so the id stays its): its tool and that tool's size."""

    def list_tools(self) -> Sequence[types.Tool]:
        self._refresh()
        return list(self._tools)

    def handler(self, name: str) -> ToolHandler | None:
        self._refresh()
        domain = self._by_name.get(name)
        if domain is None:
            return None

        async def call(arguments: dict[str, Any], request: CallRequest) -> types.CallToolResult:
            return to_call_tool_result(await domain.dispatch(arguments))

        return call

    def _refresh(self) -> None:
        upstream = self._upstream.current() if self._upstream is not None else ()
        if upstream is self._seen:
            return
        self._seen = upstream
        # A domain reused from the last catalog (``UpstreamDomains``) keeps its definition and size.
        defined = {id(domain): self._defined.get(id(domain)) or _definition(domain) for domain in upstream}
        self._defined = defined
        upstream_tools = [defined[id(domain)][1] for domain in upstream]
        size = sum(defined[id(domain)][2] for domain in upstream)
        if size > self._upstream_max_chars:
            # Per-server tools stop paying for themselves on a large catalog: every turn
            # would carry them. The `tools` facade still reaches every upstream tool.
            logger.info(
                "upstream domains take %d chars (> serve.upstream_domains_max_chars %d); serving the core facades only",
                size,
                self._upstream_max_chars,
            )
            upstream, upstream_tools = (), []
        domains = [*self._core, *upstream]
        self._tools = tuple(domain.tool_definition() for domain in self._core) + tuple(upstream_tools)
        self._by_name = {domain.name: domain for domain in domains}


def _definition(domain: Domain) -> tuple[Domain, types.Tool, int]:
    tool = domain.tool_definition()
    return domain, tool, len(tool.model_dump_json(by_alias=True, exclude_none=True))


@dataclass(frozen=True, slots=True)
class _BuiltDomain:
    """A server's domain and what it was built from."""

    name: str
    description: str
    tools: tuple[types.Tool, ...]
    domain: Domain

    def made_of(self, name: str, description: str, tools: Sequence[types.Tool]) -> bool:
        return (
            (self.name, self.description) == (name, description)
            and len(self.tools) == len(tools)
            and all(mine is theirs for mine, theirs in zip(self.tools, tools, strict=True))
        )


class UpstreamDomains:
    """One domain per exposed server (commands = original tool names) or per skill
    (commands = canonical ``server.tool`` names, tools without a skill in ``general``)."""

    def __init__(self, gateway: ServeGateway, grouping: FacadeGrouping) -> None:
        self.gateway = gateway
        self.grouping = grouping
        self._catalog: Catalog | None = None
        self._skills: tuple[str | None, ...] = ()
        self._domains: tuple[Domain, ...] = ()
        self._built: dict[str, _BuiltDomain] = {}

    def current(self) -> tuple[Domain, ...]:
        """The domains for the current catalog; the same tuple object while nothing changed."""
        catalog = self.gateway.catalog
        skills: tuple[str | None, ...] = ()
        if self.grouping is FacadeGrouping.SKILL:
            skills = tuple(primary_skill(self.gateway, entry.canonical) for entry in catalog.entries)
        if catalog is self._catalog and skills == self._skills:
            return self._domains
        if self.grouping is FacadeGrouping.SKILL:
            self._domains = tuple(self._by_skill(catalog, skills))
        else:
            self._domains = tuple(self._by_server(catalog))
        self._catalog, self._skills = catalog, skills
        return self._domains

    def _by_server(self, catalog: Catalog) -> list[Domain]:
        """Reuses the domain of a server whose tools (the same objects), name and description
        did not change: a start of fifty servers changes the catalog at each connection, and
        rebuilding every server's domain each time held the event loop for seconds."""
        by_server: dict[str, list[types.Tool]] = {}
        for entry in catalog.entries:
            by_server.setdefault(entry.server, []).append(entry.tool)
        names = domain_names(by_server, RESERVED_NAMES, SERVER_SUFFIX)
        built: dict[str, _BuiltDomain] = {}
        for server in sorted(by_server):
            tools = tuple(unique_tools(by_server[server]))
            sup = self.gateway.supervisors.get(server)
            description = (sup.config.description if sup else None) or f"The tools of MCP server {server}."
            kept = self._built.get(server)
            if kept is None or not kept.made_of(names[server], description, tools):
                domain = build_upstream_domain(names[server], tools, self._server_call(server), description=description)
                kept = _BuiltDomain(names[server], description, tools, domain)
            built[server] = kept
        self._built = built
        return sorted((kept.domain for kept in built.values()), key=lambda domain: domain.name)

    def _by_skill(self, catalog: Catalog, skills: Sequence[str | None]) -> list[Domain]:
        groups: dict[str, list[CatalogEntry]] = {}
        for entry, skill in zip(catalog.entries, skills, strict=True):
            groups.setdefault(skill or GENERAL_SKILL, []).append(entry)
        names = domain_names(groups, RESERVED_NAMES, SKILL_SUFFIX)
        domains = []
        for skill, entries in groups.items():
            tools = unique_tools(entry.tool.model_copy(update={"name": entry.canonical}) for entry in entries)
            description = (
                "Tools no skill claimed, from every server."
                if skill == GENERAL_SKILL
                else f"Tools for the skill {skill}, from every server."
            )
            call = self._canonical_call
            domains.append(build_upstream_domain(names[skill], tools, call, description=description))
        return sorted(domains, key=lambda domain: domain.name)

    def _server_call(self, server: str) -> UpstreamCall:
        async def call(tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
            return await self.gateway.call_tool(tool, arguments, server=server)

        return call

    async def _canonical_call(self, canonical: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await self.gateway.call_tool(canonical, arguments)


def domain_names(groups: Iterable[str], reserved: Collection[str], suffix: str) -> Mapping[str, str]:
    """A valid, unique tool name per group (a server or skill name), deterministically.

    Unsafe characters become ``_`` and names are cut to 64 characters. A group whose name is
    already valid and free keeps it; the others, in sorted order, take their sanitised name
    if free, else add ``suffix`` (then ``suffix2``, ``suffix3``...). So a server called
    ``tools`` is served as ``tools_server``, whatever other servers exist.
    """
    ordered = sorted(set(groups))
    safe = {group: _UNSAFE.sub("_", group)[:MAX_TOOL_NAME] for group in ordered}
    taken = set(reserved)
    out: dict[str, str] = {}
    for group in ordered:
        if safe[group] == group and group not in taken:
            out[group] = group
            taken.add(group)
    for group in ordered:
        if group in out:
            continue
        name, n = safe[group], 1
        while name in taken:
            tail = suffix if n == 1 else f"{suffix}{n}"
            name = safe[group][: MAX_TOOL_NAME - len(tail)] + tail
            n += 1
        out[group] = name
        taken.add(name)
    return out


def unique_tools(tools: Iterable[types.Tool]) -> list[types.Tool]:
    """Drop a tool whose name repeats another's case-insensitively (commands match
    case-insensitively); it stays reachable through ``tools execute``."""
    seen: set[str] = set()
    out: list[types.Tool] = []
    for tool in tools:
        key = tool.name.lower()
        if key in seen:
            logger.warning("tool %r repeats a name case-insensitively; left out of its domain", tool.name)
            continue
        seen.add(key)
        out.append(tool)
    return out
