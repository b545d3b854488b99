"""Each benchmark script the README quotes runs end to end in a small version of itself
(``bench_scripts``); the slower ones have files of their own, so workers share them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.bench_scripts import run_and_check

SCRIPTS = [
    "aggregate_bench.py",
    "aggregate_quality_bench.py",
    "startup_bench.py",
    "embed_cost_bench.py",
    "spawn_bench.py",
]


@pytest.mark.parametrize("script", SCRIPTS)
async def test_the_benchmark_runs_and_writes_its_results_where_told(tmp_path: Path, script: str) -> None:
    await run_and_check(tmp_path, script)
