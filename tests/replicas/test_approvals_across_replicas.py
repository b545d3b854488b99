"""Two real gateway processes on one PostgreSQL: an admin's approval given through one
replica releases the call held on the other, which then runs once."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import yaml
from mcp import Client

from tests.conftest import REPO
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


async def test_an_approval_given_through_one_replica_releases_the_call_held_on_the_other(
    tmp_path: Path, pg_schema: str
) -> None:
    a, b = held_replica(tmp_path, pg_schema, "a"), held_replica(tmp_path, pg_schema, "b")
    try:
        await a.start()
        await b.start()
        await poll(lambda: _serves_tally(a.base), within=DEADLINE, what="replica a to serve the tally tool")
        answers: list[str] = []
        async with admin(b.base) as http_b, Client(f"{a.base}/mcp", mode="auto", cache=None) as client:
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    answers.append(await call_text(client, "tally__tally", {"label": "shared"}))

                tg.start_soon(call)
                pending = await poll(lambda: _pending(http_b), within=DEADLINE, what="the held call listed on b")
                assert pending["arguments"] == {"label": "shared"}
                decided = await http_b.post(f"{APPROVALS}/{pending['id']}", json={"decision": "approve"})
                assert decided.status_code == 200, decided.text
            assert answers == ["shared #1"]
            assert await call_text(client, "tally__reached_calls", {}) == "1"
    finally:
        with anyio.CancelScope(shield=True):
            for replica in (a, b):
                await replica.proc.stop()
