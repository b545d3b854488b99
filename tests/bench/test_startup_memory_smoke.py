"""The memory benches (``bench/startup_memory.py``, ``embedder_memory.py``, ``import_memory.py``)
run end to end in a small version of themselves (``bench_scripts``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.bench_scripts import run_and_check

SCRIPTS = ["startup_memory.py", "embedder_memory.py", "import_memory.py"]


@pytest.mark.parametrize("script", SCRIPTS)
async def test_the_benchmark_runs_and_writes_its_results_where_told(tmp_path: Path, script: str) -> None:
    await run_and_check(tmp_path, script)
