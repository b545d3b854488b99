"""How well the aggregator query finds answers on real servers, against a naive fan-out.

Four real upstreams over stdio, filled with the corpus in ``bench/data/aggregate_quality/``:
- ``memory``: npm ``@modelcontextprotocol/server-memory`` (``search_nodes``: substring);
- ``files``: npm ``@modelcontextprotocol/server-filesystem`` (``search_files``: a glob on
  file names, configured with ``argumentsTemplate {path, pattern: "**/*{query}*"}``);
- ``issues``: our issue-tracker fixture (substring of title or body);
- ``docs``: our handbook fixture (ranks by shared words: a whole question works).
(PyPI ``mcp-server-git``'s ``git_log`` takes no search text, so it cannot be asked a
question; the aggregator would skip it as "no usable query tool".)

For each of the 52 questions (phrased as users ask them, relevant items labelled) both
strategies return 10 results:
- ``aggregator``: ``AggregatorEngine`` with default settings (plus the files template),
  every server asked;
- ``aggregator+toolsearch``: the same, with the servers chosen by the gateway's tool search
  index (bundled embedding model, the servers' tools and descriptions), forced on (by
  default the gateway narrows only past ``toolSearchMinServers`` = 8 servers);
- ``naive``: the whole question to every server's query tool, results concatenated in
  server order, the first 10 kept.

Recall@10 and nDCG@10 (binary relevance) are averaged over questions; latency is per
question. Prints a table and writes ``bench/results/aggregate_quality.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_aggregator.aggregate import AggregatorEngine, AggregatorSettings, QueryRequest
from mcp_aggregator.aggregate.query_tool_detection import QueryPlan, plan_query
from mcp_aggregator.aggregate.result_extraction import extract_results
from mcp_aggregator.catalog.tool_docs import tool_docs
from mcp_aggregator.errors import UpstreamCallError
from mcp_aggregator.search import SearchSettings, ToolSearch, build_embedder

HERE = Path(__file__).parent
DATA = HERE / "data" / "aggregate_quality"
RESULTS_PATH = HERE / "results" / "aggregate_quality.json"
BIN = HERE.parent / "upstreams" / "node_modules" / ".bin"
FIXTURES = HERE / "aggregate_quality_fixtures.py"
K = 10
# What an operator would write as each server's description (the tool index reads it).
DESCRIPTIONS = {
    "memory": "Knowledge graph memory of the team's engineering notes",
    "files": "The team's engineering notes as markdown files",
    "issues": "Issue tracker of the team's software projects",
    "docs": "The engineering handbook",
}
STRATEGIES = ("aggregator", "aggregator+toolsearch", "naive")


class BenchTarget:
    """A connected client seen as the engine's ``QueryTarget``."""

    def __init__(self, name: str, client: Client, tools: Sequence[mcp_types.Tool]) -> None:
        self.name = name
        self.client = client
        self.tools = list(tools)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        try:
            return await self.client.call_tool(name, arguments)
        except MCPError as exc:
            raise UpstreamCallError(self.name, exc.message, code=exc.code, data=exc.data) from exc


@asynccontextmanager
async def upstreams(corpus: dict[str, Any], workdir: Path) -> AsyncIterator[list[BenchTarget]]:
    files_root = workdir / "files"
    files_root.mkdir()
    for name in corpus["files"]:
        (files_root / name).write_text(f"Notes: {name.removesuffix('.md').replace('-', ' ')}\n")
    corpus_file = DATA / "corpus.json"
    env = {**os.environ, "MEMORY_FILE_PATH": str(workdir / "memory.jsonl")}
    servers = {
        "memory": StdioServerParameters(command=str(BIN / "mcp-server-memory"), env=env),
        "files": StdioServerParameters(command=str(BIN / "mcp-server-filesystem"), args=[str(files_root)]),
        "issues": StdioServerParameters(command=sys.executable, args=[str(FIXTURES), "issues", str(corpus_file)]),
        "docs": StdioServerParameters(command=sys.executable, args=[str(FIXTURES), "docs", str(corpus_file)]),
    }
    async with AsyncExitStack() as stack:
        targets = []
        for name, params in servers.items():
            client = await stack.enter_async_context(Client(params, cache=None))
            targets.append(BenchTarget(name, client, (await client.list_tools()).tools))
        created = await targets[0].client.call_tool("create_entities", {"entities": corpus["memory"]})
        assert not created.is_error, created
        yield targets


async def tool_index(targets: Sequence[BenchTarget], workdir: Path) -> ToolSearch:
    """The gateway's tool search index (bundled embedding model) over the servers' tools."""
    search = ToolSearch(SearchSettings(cache_path=workdir / "embeddings.db"), build_embedder(SearchSettings()))
    await search.upsert([doc for t in targets for doc in tool_docs(t.name, DESCRIPTIONS[t.name], t.tools)])
    return search


def settings_for(workdir: Path) -> AggregatorSettings:
    template = {"path": str(workdir / "files"), "pattern": "**/*{query}*"}
    return AggregatorSettings.from_mapping(
        {"servers": {"files": {"queryTool": "search_files", "argumentsTemplate": template}}}
    )


def item_id(server: str, content: str) -> str | None:
    """The corpus id a result stands for (None when it is none of the labelled items)."""
    if server == "files":
        return f"fs:{Path(content).name}"
    try:
        parsed = json.loads(content)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    if server == "memory":
        return f"mem:{parsed.get('name')}"
    found = parsed.get("id")
    return found if isinstance(found, str) else None


async def naive(question: str, targets: Sequence[BenchTarget], settings: AggregatorSettings) -> list[str | None]:
    """The whole question to every server at once; results concatenated in server order."""
    found: dict[str, list[str | None]] = {}

    async def ask(target: BenchTarget) -> None:
        plan = plan_query(target.tools, settings.servers.get(target.name))
        assert isinstance(plan, QueryPlan), plan
        with anyio.move_on_after(settings.server_timeout_secs):
            result = await target.call_tool(plan.tool, plan.arguments_for(question, K))
            raw = extract_results(result, server=target.name, retrieved_at=_now(), max_chars=10_000)
            found[target.name] = [item_id(target.name, r.content) for r in raw]

    async with anyio.create_task_group() as tg:
        for target in targets:
            tg.start_soon(ask, target)
    return [item for target in targets for item in found.get(target.name, [])][:K]


def _now() -> datetime:
    return datetime.now(UTC)


def recall(ranked: Sequence[str | None], relevant: set[str]) -> float:
    return len(relevant.intersection(ranked[:K])) / len(relevant)


def ndcg(ranked: Sequence[str | None], relevant: set[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, item in enumerate(ranked[:K]) if item in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), K)))
    return dcg / ideal


@dataclass
class Run:
    name: str
    recalls: list[float]
    ndcgs: list[float]
    latencies_ms: list[float]

    def row(self) -> dict[str, float]:
        lat = sorted(self.latencies_ms)
        return {
            "recall@10": round(statistics.fmean(self.recalls), 3),
            "ndcg@10": round(statistics.fmean(self.ndcgs), 3),
            "p50_ms": round(_percentile(lat, 0.5), 1),
            "p90_ms": round(_percentile(lat, 0.9), 1),
            "max_ms": round(lat[-1], 1),
        }


def _percentile(ordered: Sequence[float], share: float) -> float:
    index = min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)
    return ordered[index]


async def main(rounds: int, out: Path = RESULTS_PATH) -> None:
    corpus = json.loads((DATA / "corpus.json").read_text())
    questions = [json.loads(line) for line in (DATA / "questions.jsonl").read_text().splitlines() if line]
    workdir = Path(tempfile.mkdtemp(prefix="aggregate-quality-"))
    try:
        settings = settings_for(workdir)
        runs = {name: Run(name, [], [], []) for name in STRATEGIES}
        per_question: list[dict[str, Any]] = []
        async with upstreams(corpus, workdir) as targets:
            search = await tool_index(targets, workdir)

            async def servers_fitting(query: str, k: int) -> list[str]:
                # As the gateway does it: the query is embedded off the event loop.
                hits = await anyio.to_thread.run_sync(search.search, query, k)
                return [hit.server for hit in hits]

            engines = {
                "aggregator": AggregatorEngine(settings.model_copy(update={"tool_search_selection": False})),
                # Forced on: by default (toolSearchMinServers 8) four servers are all asked.
                "aggregator+toolsearch": AggregatorEngine(
                    settings.model_copy(update={"tool_search_min_servers": 1}),
                    tool_search=servers_fitting,
                ),
            }
            for round_index in range(rounds):
                for entry in questions:
                    relevant = set(entry["relevant"])
                    ranked: dict[str, list[str | None]] = {}
                    for name, engine in engines.items():
                        started = time.perf_counter()
                        response = await engine.query(QueryRequest(entry["question"], K), targets)
                        runs[name].latencies_ms.append((time.perf_counter() - started) * 1000)
                        ranked[name] = [item_id(r.server, r.content) for r in response.results]
                    started = time.perf_counter()
                    ranked["naive"] = await naive(entry["question"], targets, settings)
                    runs["naive"].latencies_ms.append((time.perf_counter() - started) * 1000)
                    for name, run in runs.items():
                        run.recalls.append(recall(ranked[name], relevant))
                        run.ndcgs.append(ndcg(ranked[name], relevant))
                    if round_index == 0:
                        per_question.append(
                            {"question": entry["question"]}
                            | {f"{name}_recall": round(recall(ranked[name], relevant), 3) for name in runs}
                            | {"sent": response.to_json()["metadata"].get("queriesSent")}
                        )
            search.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rows = {name: run.row() for name, run in runs.items()}
    print(f"{len(questions)} questions x {rounds} round(s), 4 upstreams (memory, files, issues, docs)\n")
    print("| strategy | Recall@10 | nDCG@10 | p50 ms | p90 ms | max ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, row in rows.items():
        print(
            f"| {name} | {row['recall@10']:.3f} | {row['ndcg@10']:.3f} | {row['p50_ms']:.1f} | "
            f"{row['p90_ms']:.1f} | {row['max_ms']:.1f} |"
        )
    ratio = rows["aggregator"]["recall@10"] / max(rows["naive"]["recall@10"], 1e-9)
    print(f"\nRecall@10 aggregator / naive: {ratio:.2f}x (goal >= 2x); p90 goal <= 5000 ms")
    await anyio.Path(out.parent).mkdir(parents=True, exist_ok=True)
    await anyio.Path(out).write_text(
        json.dumps(
            {
                "questions": len(questions),
                "rounds": rounds,
                "k": K,
                "strategies": rows,
                "recall_ratio": round(ratio, 2),
                "per_question": per_question,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1, help="times each question is asked (default 1)")
    parser.add_argument("--json", type=Path, default=RESULTS_PATH, help="where to write the results")
    args = parser.parse_args()
    anyio.run(main, args.rounds, args.json)
