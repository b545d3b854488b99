"""``bench/search_bench.py`` runs end to end in a small version of itself (``bench_scripts``)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from tests.bench.bench_scripts import REPO, child_env, run_and_check

SCRIPTS = ["search_bench.py"]


@pytest.mark.parametrize("script", SCRIPTS)
async def test_the_benchmark_runs_and_writes_its_results_where_told(tmp_path: Path, script: str) -> None:
    await run_and_check(tmp_path, script)


async def test_a_model_file_the_comparison_names_must_exist(tmp_path: Path) -> None:
    missing = tmp_path / "candidate" / "model.onnx"
    argv = [sys.executable, str(REPO / "bench" / "search_bench.py"), "--models", f"base,{missing}", "--no-latency"]
    with anyio.fail_after(60):
        done = await anyio.run_process(argv, cwd=tmp_path, env={**child_env(), "HOME": str(tmp_path)}, check=False)
    assert done.returncode == 2
    assert f"--models: no model file {missing}" in done.stderr.decode()
