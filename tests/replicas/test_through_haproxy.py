"""Clients of both eras through real HAProxy in front of two replicas, one of which dies."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.replicas.balancer import haproxy
from tests.replicas.cluster import (
    Replica,
    call_text,
    config_upstream,
    poll,
    raw_legacy_call,
    raw_legacy_session,
    replicas,
    reply_text,
)

pytestmark = pytest.mark.postgres

DEADLINE = 30.0


async def _upstream_pid(base: str) -> str:
    async with Client(f"{base}/mcp", mode="auto", cache=None) as client:
        return await call_text(client, "alpha__instance", {})


async def test_legacy_sessions_stick_and_resume_elsewhere_when_their_replica_dies_while_modern_clients_carry_on(
    tmp_path: Path, pg_schema: str
) -> None:
    upstream = [config_upstream("alpha")]
    async with replicas(tmp_path, pg_schema, ["a", "b"], servers=upstream) as (a, b):
        # Each replica runs its own alpha: the upstream's pid says which replica answered.
        pids: dict[str, Replica] = {}
        for replica in (a, b):
            pid = await poll(lambda r=replica: _upstream_pid(r.base), within=DEADLINE, what=f"alpha on {replica.name}")
            pids[pid] = replica
        assert len(pids) == 2
        async with haproxy(tmp_path, [a.port, b.port]) as lb, httpx.AsyncClient(timeout=30) as http:
            front = f"{lb.base}/mcp"

            async def both_replicas_serving() -> bool | None:
                seen = {await _upstream_pid(lb.base) for _ in range(4)}
                return True if seen == set(pids) else None

            await poll(both_replicas_serving, within=DEADLINE, what="round robin over both replicas")

            # A raw legacy session: every call lands on the replica that created it.
            session = await raw_legacy_session(http, front)
            homes = set()
            for _ in range(8):
                status, reply = await raw_legacy_call(http, front, session, "alpha__instance", {})
                assert status == 200
                homes.add(reply_text(reply))
            assert len(homes) == 1, f"a legacy session moved between replicas: {homes}"
            home = pids[homes.pop()]
            survivor = b if home is a else a

            modern_errors: list[list[str]] = [[], []]
            after_kill_ok = [0, 0]
            killed = anyio.Event()
            enough = anyio.Event()

            async def modern(slot: int) -> None:
                i = 0
                while not enough.is_set():
                    # A call cut off by the kill ends the SDK client's transport: count the
                    # failure and carry on with a new client, as an application would.
                    try:
                        async with Client(front, mode="auto", cache=None) as client:
                            while not enough.is_set():
                                text = f"m{slot}-{i}"
                                i += 1
                                assert await call_text(client, "alpha__echo", {"text": text}) == text
                                if killed.is_set():
                                    after_kill_ok[slot] += 1
                                    if min(after_kill_ok) >= 20:
                                        enough.set()
                    except* (MCPError, httpx.HTTPError, httpx2.HTTPError) as group:
                        modern_errors[slot].append(repr(group.exceptions))

            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(modern, 0)
                    tg.start_soon(modern, 1)
                    async with Client(front, mode="legacy", cache=None) as legacy:
                        sdk_homes = {await call_text(legacy, "alpha__instance", {}) for _ in range(8)}
                        assert len(sdk_homes) == 1, f"an SDK legacy session moved: {sdk_homes}"
                        sdk_home = pids[sdk_homes.pop()]

                        await home.kill()
                        killed.set()
                        # The dead replica's sessions resume on the survivor (their ids are sealed).
                        status, reply = await raw_legacy_call(http, front, session, "alpha__instance", {})
                        assert status == 200 and pids[reply_text(reply)] is survivor
                        assert await call_text(legacy, "alpha__echo", {"text": "after the kill"}) == "after the kill"
                        if sdk_home is home:
                            assert pids[await call_text(legacy, "alpha__instance", {})] is survivor

                    # Re-initializing lands on the survivor and works.
                    fresh = await raw_legacy_session(http, front)
                    status, reply = await raw_legacy_call(http, front, fresh, "alpha__instance", {})
                    assert status == 200 and pids[reply_text(reply)] is survivor
                    async with Client(front, mode="legacy", cache=None) as again:
                        assert await call_text(again, "alpha__echo", {"text": "again"}) == "again"

            # Only a call in flight at the kill may fail: one per client, at most.
            assert all(len(errors) <= 1 for errors in modern_errors), modern_errors
            assert min(after_kill_ok) >= 20
