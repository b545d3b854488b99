"""Two real gateway processes on one PostgreSQL behind real HAProxy: an admin's approval
given through the balancer, served by the replica that does not hold the call, releases the
call held on the other, which then runs once (each replica runs its own counting upstream)."""

from __future__ import annotations

import csv
import io
import sys
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import yaml
from mcp import Client

from tests.conftest import REPO
from tests.replicas.balancer import Balancer, haproxy
from tests.replicas.cluster import Replica, admin, call_text, make_replica, poll, tool_names

pytestmark = pytest.mark.postgres

DEADLINE = 30.0
APPROVALS = "/api/v1/aggregator/approvals"
TALLY = {
    "name": "tally",
    "transport": "stdio",
    "command": sys.executable,
    "args": ["-m", "tests.upstream.tally_server", "--transport", "stdio"],
    "cwd": str(REPO),
}


def held_replica(directory: Path, schema: str, name: str) -> Replica:
    replica = make_replica(directory, schema, name, servers=[TALLY])
    config = yaml.safe_load(replica.config.read_text())
    config["approvals"] = [{"name": "tallies", "tools": ["tally.tally"], "ask": "admin", "timeout_secs": 120}]
    replica.config.write_text(yaml.safe_dump(config))
    return replica


async def _pending(http: httpx.AsyncClient) -> dict[str, Any] | None:
    listed = (await http.get(APPROVALS)).json()["approvals"]
    return listed[0] if listed else None


async def _serves_tally(base: str) -> bool | None:
    return True if "tally__tally" in await tool_names(base) else None


async def _waiting(replica: Replica) -> int:
    async with admin(replica.base) as http:
        text = (await http.get("/metrics")).text
    [line] = [line for line in text.splitlines() if line.startswith("mcp_aggregator_approvals_waiting ")]
    return int(float(line.split()[1]))


async def _holder(a: Replica, b: Replica) -> Replica | None:
    waiting = {replica.name: await _waiting(replica) for replica in (a, b)}
    if sorted(waiting.values()) != [0, 1]:
        return None
    return a if waiting["a"] else b


async def _sessions(lb: Balancer) -> dict[str, int]:
    """Requests the balancer chose each server for (not those a session stuck to it), by
    server name (``r1``, ``r2``), from HAProxy's stats."""
    async with httpx.AsyncClient(timeout=10) as http:
        text = (await http.get(f"http://127.0.0.1:{lb.stats_port}/;csv")).text
    rows = csv.DictReader(io.StringIO(text.lstrip("# ")))
    servers = (row for row in rows if row["pxname"] == "replicas" and row["svname"][:1] == "r")
    return {row["svname"]: int(row["lbtot"]) for row in servers}


async def _served(lb: Balancer, request: Any) -> str:
    """Send ``request`` through HAProxy (nothing else goes through it meanwhile); which server took it."""
    before = await _sessions(lb)
    await request()
    after = await _sessions(lb)
    [server] = [name for name, count in after.items() if count > before.get(name, 0)]
    return server


async def test_an_approval_given_through_haproxy_on_one_replica_releases_the_call_held_on_the_other(
    tmp_path: Path, pg_schema: str
) -> None:
    a, b = held_replica(tmp_path, pg_schema, "a"), held_replica(tmp_path, pg_schema, "b")
    try:
        await a.start()
        await b.start()
        for replica in (a, b):
            await poll(partial(_serves_tally, replica.base), within=DEADLINE, what=f"{replica.name} serving tally")
        server_of = {a.name: "r1", b.name: "r2"}
        answers: list[str] = []
        async with (
            haproxy(tmp_path, [a.port, b.port]) as lb,
            admin(lb.base) as http,
            # A session sticks to its replica, so its own requests never shift the round robin.
            Client(f"{lb.base}/mcp", mode="legacy", cache=None) as client,
            anyio.create_task_group() as tg,
        ):

            async def call() -> None:
                answers.append(await call_text(client, "tally__tally", {"label": "shared"}))

            tg.start_soon(call)
            pending = await poll(lambda: _pending(http), within=DEADLINE, what="the held call listed")
            assert pending["arguments"] == {"label": "shared"}
            holder = await poll(lambda: _holder(a, b), within=DEADLINE, what="one replica holding the call")
            # Round robin: once the holder took a request, the next one goes to the other replica.
            while await _served(lb, lambda: http.get("/healthz")) != server_of[holder.name]:
                pass
            decided: list[httpx.Response] = []

            async def approve() -> None:
                decided.append(await http.post(f"{APPROVALS}/{pending['id']}", json={"decision": "approve"}))

            decider = await _served(lb, approve)
            assert decider != server_of[holder.name]
            assert decided[0].status_code == 200, decided[0].text
        assert answers == ["shared #1"]
        other = b if holder is a else a
        for replica, reached in ((holder, "1"), (other, "0")):
            async with Client(f"{replica.base}/mcp", mode="auto", cache=None) as direct:
                assert await call_text(direct, "tally__reached_calls", {}) == reached
    finally:
        with anyio.CancelScope(shield=True):
            for replica in (a, b):
                await replica.proc.stop()
