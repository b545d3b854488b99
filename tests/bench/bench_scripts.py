"""Running one benchmark script end to end in a small version of itself, for the smoke tests.

Two of them had stopped running unnoticed: one passed the engine a plain function after its
tool search became async, another failed on a ``--size`` within the real tools. Each runs
from a scratch directory, with its results and temporary files kept in it. No timing is
asserted: speed is the benchmarks' business, not the tests'. The scripts are spread over
several test files, so that ``--dist loadfile`` runs them on several workers at once: in one
file they held one worker for over ten minutes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from tests.conftest import REPO
from tests.replicas.cluster import child_env


def check_aggregate(result: dict[str, Any]) -> None:
    rows = result["rows"]
    assert rows and all(row["samples"] > 0 for row in rows), rows


def check_quality(result: dict[str, Any]) -> None:
    strategies = result["strategies"]
    assert set(strategies) == {"aggregator", "aggregator+toolsearch", "naive"}
    # The labelled corpus is fixed: the aggregator finds more of it than the naive fan-out.
    assert strategies["aggregator"]["recall@10"] > strategies["naive"]["recall@10"] > 0


def check_search(result: dict[str, Any]) -> None:
    for data_set in ("livemcpbench", "mcp_devset"):
        shipped = result["quality"][data_set]["hybrid (shipped)"]
        assert shipped["all"]["n"] == shipped["single"]["n"] + shipped["multi"]["n"] > 0
        assert 0 < shipped["all"]["recall@5"] <= 1
    assert "fields (fit on LiveMCPBench)" in result["quality"]["mcp_devset"]
    assert "joint (fit on LiveMCPBench)" in result["quality"]["mcp_devset"]
    assert result["latency"]["catalogue"]["tools"] == 600


def check_tokens(result: dict[str, Any]) -> None:
    assert result["per_task"]["tasks"] > 0


def check_code_mode(result: dict[str, Any]) -> None:
    assert result["tokens"][0]["tasks"] > 0 and result["tokens"][0]["context"]["code"] > 0
    assert result["latency"]["one_script_two_calls"]["p50_ms"] > 0


def check_code_listing(result: dict[str, Any]) -> None:
    listings = result["listings"]
    assert listings["code"]["tools"] == 3 and listings["passthrough"]["tools"] > 3
    assert 0 < listings["code"]["chars"] < listings["passthrough"]["chars"]


def check_guardrails(result: dict[str, Any]) -> None:
    assert result["stage_cost"]["2KB"]["fast_path_raw"]["p50_us"] > 0
    assert result["end_to_end"]["2KB"]["no_guardrails"]["p50_us"] > 0
    # Both corpora are fixed: the default rules alter no benign result and find the labelled ones.
    assert result["false_positives"]["results"] > 200 and result["false_positives"]["altered_pct"] <= 1
    assert result["detection"]["detected_pct"] >= 95
    # Every hostile input judged by a block and a mask rule, plus the three baselines.
    hostile = result["hostile"]
    assert len(hostile) == 55 and all(row["cpu_ms"] >= 0 for row in hostile.values()), hostile


def check_startup(result: dict[str, Any]) -> None:
    (run,) = result["results"]
    assert (run["servers"], run["tools"]) == (2, 5)
    assert run["index_whole_s"] is not None and run["first_healthz_s"] is not None
    assert run["index_whole_cpu_s"] >= run["listener_up_cpu_s"] > 0
    assert run["embedded_at_limit"] is None, "whole before --limit"
    # Every route is reported (a start this small may be whole before some were asked), and
    # the call on a connected server, when made, got its tool's answer.
    for route in ("healthz", "readyz", "admin", "detail", "state", "mcp", "tools_list", "mcp_delete", "call"):
        assert f"{route}_start_max_ms" in run and route in run["slowest_during_start"], route
    assert all(note == "200" for _at, _ms, note in run["slowest_during_start"]["call"])
    assert result["timelines"]["this"]
    assert len(result["load_average"]) == 3


def check_embed_cost(result: dict[str, Any]) -> None:
    rows = {row["way"]: row for row in result["rows"]}
    assert len(rows) == 5 and all(row["cpu_ms_per_text"] > 0 for row in rows.values()), rows
    assert rows["packaged, one text per inference (baseline)"]["worst_cosine_to_packaged"] == 1.0
    # The shipped variant passed the variant check's floor on these texts too.
    assert all(row["worst_cosine_to_packaged"] > 0.98 for row in rows.values()), rows


def check_embedder_memory(result: dict[str, Any]) -> None:
    steps = [step for step, _, _ in result["steps"]]
    assert steps[0] == "interpreter" and steps[-1] == "free_heap" and "8 texts embedded" in steps
    assert result["peak_mb"] > 0 and len(result["vectors"]) == 16


def check_import_memory(result: dict[str, Any]) -> None:
    assert result["imports_mb"] > 0
    assert result["by_package"]["mcp_aggregator"] > 0


def check_startup_memory(result: dict[str, Any]) -> None:
    phases = result["results"]["this"]["phases"]
    assert list(phases) == ["interpreter", "imports", "listening", "connected", "whole"]
    assert phases["imports"]["rss_mb"] > phases["interpreter"]["rss_mb"] > 0
    assert phases["whole"]["peak_mb"] >= phases["whole"]["rss_mb"]


async def run_script(tmp_path: Path, script: str, args: list[str], flag: str) -> dict[str, Any]:
    """The JSON ``bench/<script>`` wrote where ``flag`` told it (a failed run fails the test)."""
    out = tmp_path / "out" / "result.json"
    argv = [sys.executable, str(REPO / "bench" / script), *args, flag, str(out)]
    env = {**child_env(), "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    with anyio.fail_after(300):
        done = await anyio.run_process(argv, cwd=tmp_path, env=env, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def check_spawn(result: dict[str, Any]) -> None:
    for way in ("subprocess_exec", "spawn_child"):
        assert result[way]["held_ms"] >= 0 and result[way]["cpu_ms"] >= 0


Check = Callable[[dict[str, Any]], None]

SCRIPTS: dict[str, tuple[list[str], str, Check]] = {
    "aggregate_bench.py": (["--quick"], "--json", check_aggregate),
    "aggregate_quality_bench.py": (["--rounds", "1"], "--json", check_quality),
    "search_bench.py": (["--size", "600", "--no-e5", "--quick"], "--json", check_search),
    "token_bench.py": (["--search", "bm25", "--servers", "10"], "--out", check_tokens),
    "code_mode_bench.py": (
        ["--search", "bm25", "--result-tokens", "0", "--iterations", "5", "--tasks", "5"],
        "--json",
        check_code_mode,
    ),
    "code_listing_bench.py": ([], "--json", check_code_listing),
    "guardrails_bench.py": (["--quick"], "--json", check_guardrails),
    "startup_bench.py": (
        ["--servers", "2", "--tools", "5", "--searches", "5", "--limit", "200"],
        "--json",
        check_startup,
    ),
    "startup_memory.py": (["--servers", "2", "--tools", "5", "--limit", "200"], "--json", check_startup_memory),
    "embedder_memory.py": (["--texts", "8"], "--json", check_embedder_memory),
    "import_memory.py": ([], "--json", check_import_memory),
    "embed_cost_bench.py": (["--texts", "8", "--rounds", "1"], "--json", check_embed_cost),
    "spawn_bench.py": (["--rss-mb", "16", "--starts", "2"], "--json", check_spawn),
}
"""Script -> (its arguments for a small run, the flag naming its JSON output, the check of it)."""


async def run_and_check(tmp_path: Path, script: str) -> None:
    args, flag, check = SCRIPTS[script]
    check(await run_script(tmp_path, script, args, flag))
