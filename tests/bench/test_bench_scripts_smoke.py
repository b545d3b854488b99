"""Each benchmark script the README quotes runs end to end in a small version of itself.

Two of them had stopped running unnoticed: one passed the engine a plain function after its
tool search became async, another failed on a ``--size`` within the real tools. Run here from
a scratch directory, with their results and temporary files kept in it. No timing is
asserted: speed is the benchmarks' business, not the tests'."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import REPO
from tests.replicas.cluster import child_env


def _aggregate(result: dict[str, Any]) -> None:
    rows = result["rows"]
    assert rows and all(row["samples"] > 0 for row in rows), rows


def _quality(result: dict[str, Any]) -> None:
    strategies = result["strategies"]
    assert set(strategies) == {"aggregator", "aggregator+toolsearch", "naive"}
    # The labelled corpus is fixed: the aggregator finds more of it than the naive fan-out.
    assert strategies["aggregator"]["recall@10"] > strategies["naive"]["recall@10"] > 0


def _search(result: dict[str, Any]) -> None:
    for data_set in ("livemcpbench", "mcp_devset"):
        shipped = result["quality"][data_set]["hybrid (shipped)"]
        assert shipped["all"]["n"] == shipped["single"]["n"] + shipped["multi"]["n"] > 0
        assert 0 < shipped["all"]["recall@5"] <= 1
    assert "fields (fit on LiveMCPBench)" in result["quality"]["mcp_devset"]
    assert "joint (fit on LiveMCPBench)" in result["quality"]["mcp_devset"]
    assert result["latency"]["catalogue"]["tools"] == 600


def _tokens(result: dict[str, Any]) -> None:
    assert result["per_task"]["tasks"] > 0


def _code_mode(result: dict[str, Any]) -> None:
    assert result["tokens"][0]["tasks"] > 0 and result["tokens"][0]["context"]["code"] > 0
    assert result["latency"]["one_script_two_calls"]["p50_ms"] > 0


def _guardrails(result: dict[str, Any]) -> None:
    assert result["stage_cost"]["2KB"]["fast_path_raw"]["p50_us"] > 0
    assert result["end_to_end"]["2KB"]["no_guardrails"]["p50_us"] > 0
    # Both corpora are fixed: the default rules alter no benign result and find the labelled ones.
    assert result["false_positives"]["results"] > 200 and result["false_positives"]["altered_pct"] <= 1
    assert result["detection"]["detected_pct"] >= 95


def _startup(result: dict[str, Any]) -> None:
    (run,) = result["results"]
    assert (run["servers"], run["tools"]) == (2, 5)
    assert run["index_whole_s"] is not None and run["first_healthz_s"] is not None
    assert result["timelines"]["this"]


def _startup_memory(result: dict[str, Any]) -> None:
    phases = result["results"]["this"]["phases"]
    assert list(phases) == ["interpreter", "imports", "listening", "connected", "whole"]
    assert phases["imports"]["rss_mb"] > phases["interpreter"]["rss_mb"] > 0
    assert phases["whole"]["peak_mb"] >= phases["whole"]["rss_mb"]


SCRIPTS = [
    ("aggregate_bench.py", ["--quick"], "--json", _aggregate),
    ("aggregate_quality_bench.py", ["--rounds", "1"], "--json", _quality),
    ("search_bench.py", ["--size", "600", "--no-e5", "--quick"], "--json", _search),
    ("token_bench.py", ["--search", "bm25"], "--out", _tokens),
    ("code_mode_bench.py", ["--search", "bm25", "--result-tokens", "0", "--iterations", "5"], "--json", _code_mode),
    ("guardrails_bench.py", ["--quick"], "--json", _guardrails),
    ("startup_bench.py", ["--servers", "2", "--tools", "5", "--searches", "5", "--limit", "200"], "--json", _startup),
    ("startup_memory.py", ["--servers", "2", "--tools", "5", "--limit", "200"], "--json", _startup_memory),
]


@pytest.mark.parametrize(("script", "args", "flag", "check"), SCRIPTS, ids=[s[0] for s in SCRIPTS])
async def test_the_benchmark_runs_and_writes_its_results_where_told(
    tmp_path: Path, script: str, args: list[str], flag: str, check: Any
) -> None:
    out = tmp_path / "out" / "result.json"
    argv = [sys.executable, str(REPO / "bench" / script), *args, flag, str(out)]
    env = {**child_env(), "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    with anyio.fail_after(300):
        done = await anyio.run_process(argv, cwd=tmp_path, env=env, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    check(json.loads(out.read_text()))
