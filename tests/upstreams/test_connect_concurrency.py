"""``serve.connect_concurrency``: at most that many upstream connections are made at once; a
server waiting for its turn is CONNECTING, and a call to it waits as for any first connection."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from pydantic import ValidationError

from mcp_aggregator.health import ServerStatus
from mcp_aggregator.settings import Settings
from tests.conftest import running_gateway, settings_for, stdio_fixture
from tests.serve.test_first_connection_wait import gated_fixture, open_gate


async def test_a_server_waits_for_its_turn_to_connect_and_a_call_to_it_waits_with_it(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    # alpha holds the only connection slot until its gate opens; beta waits for the slot.
    settings = settings_for(gated_fixture(gate), stdio_fixture("beta"), connect_concurrency=1, list_wait_secs=60)
    results: list[types.CallToolResult] = []
    async with running_gateway(settings, settle=0) as (gateway, client):
        await gateway.wait_until(lambda: gateway.upstreams.queued_connects == 1, timeout_secs=30)
        assert gateway.supervisor("beta").status is ServerStatus.CONNECTING
        assert gateway.health()["status"] == "starting"
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                results.append(await client.call_tool("beta__echo", {"text": "my turn came"}))

            tg.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            assert results == []
            assert gateway.supervisor("beta").status is ServerStatus.CONNECTING
            await anyio.to_thread.run_sync(open_gate, gate)
        block = results[0].content[0]
        assert isinstance(block, types.TextContent) and block.text == "my turn came"
        alpha, beta = gateway.supervisor("alpha"), gateway.supervisor("beta")
        assert alpha.status is beta.status is ServerStatus.CONNECTED
        assert gateway.health()["status"] == "ok"


def test_connect_concurrency_defaults_to_twice_the_cores_and_at_least_four() -> None:
    serve = Settings.model_validate({}).serve
    assert serve.connect_concurrency is None
    assert serve.connect_limit == max(4, 2 * (os.cpu_count() or 1))
    assert Settings.model_validate({"serve": {"connect_concurrency": 2}}).serve.connect_limit == 2


@pytest.mark.parametrize("value", [0, -1, "many", 1025])
def test_a_bad_connect_concurrency_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(ValidationError, match=r"serve\.connect_concurrency"):
        Settings.model_validate({"serve": {"connect_concurrency": value}})
