"""A 2025-11-25 session outlives its replica: two replicas on PostgreSQL behind real HAProxy."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client

from tests.conftest import REPO
from tests.replicas.balancer import haproxy
from tests.replicas.cluster import (
    LEGACY_HEADERS,
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
COUNTER = "cb://counter"


def callbacks_upstream() -> dict[str, Any]:
    """An upstream with a subscribable resource: ``bump`` changes it and says who subscribed."""
    return {
        "name": "cb",
        "transport": "stdio",
        "command": sys.executable,
        "args": ["-m", "tests.upstream.callbacks_server", "stdio"],
        "cwd": str(REPO),
        "protocol": "legacy",
    }


async def _upstream_pid(base: str) -> str:
    async with Client(f"{base}/mcp", mode="auto", cache=None) as client:
        await call_text(client, "cb__plain", {})
        return await call_text(client, "alpha__instance", {})


def _tampered(session_id: str) -> str:
    middle = len(session_id) // 2
    flipped = "A" if session_id[middle] != "A" else "B"
    return session_id[:middle] + flipped + session_id[middle + 1 :]


async def test_a_legacy_session_resumes_on_another_replica_when_its_own_dies(tmp_path: Path, pg_schema: str) -> None:
    upstreams = [config_upstream("alpha"), callbacks_upstream()]
    async with replicas(tmp_path, pg_schema, ["a", "b"], servers=upstreams) as (a, b):
        pids: dict[str, Replica] = {}
        for replica in (a, b):
            pid = await poll(
                lambda r=replica: _upstream_pid(r.base), within=DEADLINE, what=f"upstreams on {replica.name}"
            )
            pids[pid] = replica
        updates: list[str] = []
        updated = anyio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                updates.append(str(message.params.uri))
                updated.set()

        async with haproxy(tmp_path, [a.port, b.port]) as lb, httpx.AsyncClient(timeout=30) as http:
            front = f"{lb.base}/mcp"
            with anyio.fail_after(90):
                async with Client(front, mode="legacy", cache=None, message_handler=on_message) as client:
                    home = pids[await call_text(client, "alpha__instance", {})]
                    survivor = b if home is a else a
                    subscribe = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=COUNTER))
                    await client.session.send_request(subscribe, types.EmptyResult)
                    assert "subscribers: ['cb://counter']" in await call_text(client, "cb__bump", {})

                    await home.kill()

                    # The same client, no new initialize: listing and calling go on through the survivor.
                    names = {tool.name for tool in (await client.list_tools()).tools}
                    assert {"alpha__instance", "cb__bump"} <= names
                    assert pids[await call_text(client, "alpha__instance", {})] is survivor
                    # The subscription came along: the survivor's upstream has it, and updates
                    # reach the client once its event stream has reconnected there.
                    updates.clear()
                    updated = anyio.Event()

                    async def delivered() -> bool | None:
                        text = await call_text(client, "cb__bump", {})
                        assert "subscribers: ['cb://counter']" in text, text
                        with anyio.move_on_after(0.5):
                            await updated.wait()
                        return True if updated.is_set() else None

                    await poll(delivered, within=DEADLINE, what="a resource update through the survivor")
                    assert set(updates) == {COUNTER}

            # A raw session shows the id: sealed, a few hundred bytes, and refused once altered.
            raw = await raw_legacy_session(http, front)
            assert raw.startswith("s1.") and len(raw) < 512, raw
            status, reply = await raw_legacy_call(http, front, raw, "alpha__echo", {"text": "ok"})
            assert status == 200 and reply_text(reply) == "ok"
            for bad in (_tampered(raw), raw[:-4], "s1." + "A" * 120, "0123456789abcdef0123456789abcdef"):
                status, _ = await raw_legacy_call(http, front, bad, "alpha__echo", {"text": "x"})
                assert status == 404, bad
            ended = await http.delete(front, headers={**LEGACY_HEADERS, "mcp-session-id": raw})
            assert ended.status_code == 200
            status, _ = await raw_legacy_call(http, front, raw, "alpha__echo", {"text": "x"})
            assert status == 404, "a session its client ended must not resume"
