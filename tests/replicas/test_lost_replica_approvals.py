"""Two real gateway processes on one PostgreSQL: a replica killed (SIGKILL) while it holds a
call for approval leaves its heartbeat behind, and the live replica cancels that call within
the lost bound, naming the lost replica, audited once; deciding it then answers 409 saying
why; a replica that stops cleanly removes its own row of ``replicas``."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import httpx
import pytest
import yaml

from tests.replicas.cluster import PG_DSN, Replica, admin, poll, raw_legacy_call, raw_legacy_session
from tests.replicas.test_approvals_across_replicas import APPROVALS, _pending, _serves_tally, held_replica

pytestmark = pytest.mark.postgres

DEADLINE = 30.0
HEARTBEAT = {"heartbeat_secs": 1.0, "replica_lost_secs": 3.0}


def beating_replica(directory: Path, schema: str, name: str) -> Replica:
    replica = held_replica(directory, schema, name)
    config = yaml.safe_load(replica.config.read_text())
    config["registry"].update(HEARTBEAT)
    replica.config.write_text(yaml.safe_dump(config))
    return replica


async def homes(schema: str) -> dict[str, str | None]:
    """The ``replicas`` rows: home URL by replica id."""
    conn = await asyncpg.connect(PG_DSN, timeout=5)
    try:
        rows = await conn.fetch(f'SELECT id, home FROM "{schema}".replicas')
    finally:
        await conn.close()
    return {row["id"]: row["home"] for row in rows}


async def _both_home(schema: str, a: Replica, b: Replica) -> dict[str, str] | None:
    by_home = {home: replica_id for replica_id, home in (await homes(schema)).items() if home is not None}
    return by_home if {a.base, b.base} <= by_home.keys() else None


async def _settled(http: httpx.AsyncClient, approval_id: str) -> dict[str, Any] | None:
    shown: dict[str, Any] = (await http.get(f"{APPROVALS}/{approval_id}")).json()
    return shown if shown["status"] != "pending" else None


async def _cancel_events(http: httpx.AsyncClient) -> list[dict[str, Any]] | None:
    items = (await http.get("/api/v1/aggregator/audit", params={"tool": "tally"})).json()["items"]
    found = [item for item in items if item["method"] == "approvals/cancelled"]
    return found or None


async def test_a_replica_killed_holding_a_call_has_it_cancelled_by_the_live_one(tmp_path: Path, pg_schema: str) -> None:
    a, b = beating_replica(tmp_path, pg_schema, "a"), beating_replica(tmp_path, pg_schema, "b")
    try:
        await a.start()
        await b.start()
        await poll(partial(_serves_tally, a.base), within=DEADLINE, what="a serving tally")
        ids = await poll(partial(_both_home, pg_schema, a, b), within=DEADLINE, what="both replicas' homes")
        outcome: list[object] = []
        async with admin(b.base) as http, httpx.AsyncClient(timeout=60) as raw, anyio.create_task_group() as tg:
            session = await raw_legacy_session(raw, f"{a.base}/mcp")

            async def call() -> None:
                try:
                    outcome.append(await raw_legacy_call(raw, f"{a.base}/mcp", session, "tally__tally", {"label": "x"}))
                except httpx.TransportError as exc:
                    outcome.append(exc)

            tg.start_soon(call)
            pending = await poll(lambda: _pending(http), within=DEADLINE, what="the held call listed through b")
            await a.kill()
            settled = await poll(partial(_settled, http, pending["id"]), within=DEADLINE, what="b settling a's call")
            assert settled["status"] == "cancelled" and settled["via"] == "gateway"
            assert settled["reason"].startswith(
                f"the gateway replica holding the call was lost (replica {ids[a.base]} at {a.base}, last seen "
            )
            refused = await http.post(f"{APPROVALS}/{pending['id']}", json={"decision": "approve"})
            assert refused.status_code == 409
            assert "is cancelled already: the gateway replica holding the call was lost" in refused.json()["detail"]
            [event] = await poll(lambda: _cancel_events(http), within=DEADLINE, what="the cancellation audited")
            assert ids[a.base] in event["error"] and event["outcome"] == "denied"
        assert isinstance(outcome[0], httpx.TransportError)  # its client lost the connection with a
        assert ids[a.base] in await homes(pg_schema)  # a lost replica's row stays a day (who died, when)
        await b.proc.stop()  # SIGTERM: uvicorn's graceful shutdown, the gateway's exit
        assert ids[b.base] not in await homes(pg_schema)  # a clean stop removes its own row
    finally:
        with anyio.CancelScope(shield=True):
            for replica in (a, b):
                await replica.proc.stop()
