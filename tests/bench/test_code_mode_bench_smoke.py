"""``bench/code_mode_bench.py`` runs end to end in a small version of itself (``bench_scripts``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.bench_scripts import run_and_check

SCRIPTS = ["code_mode_bench.py", "code_listing_bench.py"]


@pytest.mark.parametrize("script", SCRIPTS)
async def test_the_benchmark_runs_and_writes_its_results_where_told(tmp_path: Path, script: str) -> None:
    await run_and_check(tmp_path, script)
