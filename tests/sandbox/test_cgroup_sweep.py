"""Leftover cgroup leaves (a gateway killed, a server whose leaf would not empty in time) are
swept by the next start; a leaf of a live gateway, or one this process holds, never is."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from mcp_aggregator.sandbox import cgroup_limits
from mcp_aggregator.sandbox.cgroup_limits import CGROUP_ROOT, CgroupLimits, stale, sweep
from mcp_aggregator.sandbox.sandbox_launch import host_facts
from mcp_aggregator.sandbox.sandbox_policy import Limits


def test_a_leaf_is_stale_when_its_gateway_is_gone_or_this_one_no_longer_holds_it() -> None:
    alive = {100}.__contains__
    assert stale("notes-7-1", own_pid=100, held=set(), alive=alive)  # pid 7 is gone
    assert not stale("notes-100-1", own_pid=200, held=set(), alive=alive)  # pid 100 lives
    assert stale("my-server-200-3", own_pid=200, held={"my-server-200-4"}, alive=alive)
    assert not stale("my-server-200-4", own_pid=200, held={"my-server-200-4"}, alive=alive)
    assert not stale("someone-elses", own_pid=200, held=set(), alive=alive)


@pytest.mark.skipif(host_facts().cgroups is None, reason="no writable cgroup on this host")
def test_the_sweep_removes_leaves_of_dead_gateways_and_keeps_live_ones_and_held_ones() -> None:
    version = host_facts().cgroups
    assert version is not None
    dead = subprocess.Popen(["/bin/true"])
    dead.wait()
    live = subprocess.Popen(["/bin/sleep", "60"])
    tag = f"sweep{uuid.uuid4().hex[:8]}"
    held = CgroupLimits(version, tag, Limits(memory_mb=64, processes=8, cpu_secs=None))
    parents = (
        [CGROUP_ROOT / "mcp-aggregator"]
        if version == "v2"
        else [CGROUP_ROOT / "memory" / "mcp-aggregator", CGROUP_ROOT / "pids" / "mcp-aggregator"]
    )
    names = {"dead": f"{tag}-{dead.pid}-1", "live": f"{tag}-{live.pid}-1", "mine": f"{tag}-{os.getpid()}-999999"}
    try:
        held.create()
        for parent in parents:
            for name in names.values():
                (parent / name).mkdir()
        sweep(version)
        for parent in parents:
            left = {path.name for path in parent.iterdir() if path.name.startswith(tag)}
            assert left == {names["live"], held.leaf}, (parent, left)
    finally:
        live.kill()
        live.wait()
        for parent in parents:
            for name in (*names.values(), held.leaf):
                if (parent / name).exists():
                    (parent / name).rmdir()
        cgroup_limits._held.discard(held.leaf)
