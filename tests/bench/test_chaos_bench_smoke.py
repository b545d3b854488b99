"""The chaos benchmark (bench/chaos_bench.py): its pure reading of what happened, and one
short real run of every fault. No timing is asserted: speed is the benchmark's business."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from bench.chaos.observe import Call, FaultWindow, Record, StatusSample, fault_row

from tests.conftest import REPO
from tests.replicas.cluster import child_env


def test_a_fault_row_counts_failures_per_era_and_times_the_recovery_from_when_the_upstream_was_back() -> None:
    window = FaultWindow("http stop", "web", began=10.0, back=13.0, ended=20.0, rss_before_kb=2048, rss_after_kb=3072)
    record = Record(
        calls=[
            Call("web", "new", 9.0, 9.1, True),
            Call("web", "new", 10.1, 10.2, False, "refused"),
            Call("web", "old", 12.0, 12.1, False, "unavailable"),
            Call("web", "old", 13.2, 13.5, True),
            Call("clock", "new", 11.0, 11.1, True),
        ],
        samples=[
            StatusSample(9.9, {"web": "CONNECTED"}),
            StatusSample(10.3, {"web": "ERROR"}),
            StatusSample(11.0, {"web": "CONNECTING"}),
            StatusSample(13.4, {"web": "CONNECTED"}),
        ],
        failures=[StatusSample(10.4, {"web": 1})],
    )
    row = fault_row(window, record)
    assert row["failed"] == {"new": 1, "old": 1}
    assert (row["calls"], row["failed_other_upstreams"], row["calls_other_upstreams"]) == (3, 0, 1)
    assert (row["first_error_s"], row["status_left_connected_s"], row["recovery_s"]) == (0.2, 0.3, 0.5)
    assert row["timeline"] == ["CONNECTED@-0.10", "ERROR@+0.30", "CONNECTING@+1.00", "CONNECTED@+3.40"]
    assert (row["max_consecutive_failures"], row["rss_before_mb"], row["rss_after_mb"]) == (1, 2.0, 3.0)


def test_a_fault_nobody_noticed_recovers_at_once() -> None:
    window = FaultWindow("quiet", "web", began=1.0, back=1.0, ended=2.0, rss_before_kb=None, rss_after_kb=None)
    row = fault_row(window, Record(calls=[Call("web", "new", 1.1, 1.2, True)]))
    assert (row["first_error_s"], row["recovery_s"], row["status_left_connected_s"]) == (None, 0.0, None)


async def test_the_chaos_bench_runs_every_fault_and_writes_its_results(tmp_path: Path) -> None:
    out = tmp_path / "chaos.json"
    argv = [
        sys.executable,
        str(REPO / "bench" / "chaos_bench.py"),
        *("--outage", "1", "--rate", "4", "--sessions", "3", "--idle", "1", "--watch", "30", "--settle", "0.5"),
        *("--json", str(out)),
    ]
    env = {**child_env(), "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    with anyio.fail_after(420):
        done = await anyio.run_process(argv, cwd=tmp_path, env=env, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    result = json.loads(out.read_text())
    faults = {row["fault"]: row for row in result["faults"]}
    assert list(faults) == ["stdio kill -9", "http stop 1s + restart", "http hung 1s", "3 abandoned sessions"]
    for name in ("stdio kill -9", "http stop 1s + restart"):
        assert faults[name]["recovery_s"] is not None, faults[name]
        assert faults[name]["status_left_connected_s"] is not None, faults[name]
    assert "3 closed by the idle timer" in faults["3 abandoned sessions"]["note"]
    assert "| stdio kill -9 | clock |" in done.stdout.decode()
