"""The replicas benchmark (bench/replicas_bench.py) runs end to end: one tiny real run.

It had stopped working unnoticed twice (a settings rule it broke, load sent before HAProxy
marked the replicas up): this keeps it runnable. No timing is asserted."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from tests.conftest import REPO
from tests.replicas.balancer import haproxy_or_skip
from tests.replicas.cluster import child_env, fresh_schema


@pytest.mark.postgres
async def test_one_and_two_replicas_serve_every_call_and_a_registration_reaches_both(tmp_path: Path) -> None:
    haproxy_or_skip()
    await fresh_schema()  # skips (or fails in CI) without PostgreSQL
    out = tmp_path / "replicas.json"
    argv = [sys.executable, str(REPO / "bench" / "replicas_bench.py"), "--replicas", "1", "2"]
    argv += ["--secs", "1", "--warmup", "0.5", "--clients", "2", "--registrations", "2", "--json", str(out)]
    with anyio.fail_after(300):
        done = await anyio.run_process(argv, cwd=REPO, env={**child_env(), "TMPDIR": str(tmp_path)}, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    result = json.loads(out.read_text())
    rows = {row["replicas"]: row for row in result["rows"]}
    assert sorted(rows) == [1, 2]
    for row in rows.values():
        assert row["errors"] == 0 and row["calls"] > 0, row
    spread = rows[2]["propagation"]
    assert spread["registrations"] == 2 and spread["max_ms"] >= spread["p50_ms"] > 0
    assert "| 2 |" in done.stdout.decode()
    assert os.listdir(tmp_path) == ["replicas.json"]  # its scratch directory is gone
