"""A 2026-07-28 retry that reaches another replica is sent on to the one its call waits on,
while that one lives; two real replicas on one PostgreSQL schema (shared sealing keys)."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.relay.test_input_requests import ClientSide
from tests.replicas.cluster import call_text, poll, replicas
from tests.replicas.test_sealed_sessions import callbacks_upstream

pytestmark = pytest.mark.postgres

DEADLINE = 30.0


async def _serving(base: str) -> bool | None:
    async with ClientSide().client(f"{base}/mcp", "auto") as client:
        return True if await call_text(client, "cb__plain", {}) else None


async def _asked(client: object) -> types.InputRequiredResult:
    first = await client.session.call_tool("cb__ask_user", {}, allow_input_required=True)  # type: ignore[attr-defined]
    assert isinstance(first, types.InputRequiredResult) and first.input_requests and first.request_state
    return first


def _answers(asked: types.InputRequiredResult) -> dict[str, types.InputResponse]:
    assert asked.input_requests is not None
    [key] = asked.input_requests
    return {key: types.ElicitResult(action="accept", content={"name": "Lin"})}


async def test_a_retry_reaching_another_replica_is_answered_by_the_one_holding_its_call(
    tmp_path: Path, pg_schema: str
) -> None:
    side = ClientSide()
    async with replicas(tmp_path, pg_schema, ["a", "b"], servers=[callbacks_upstream()]) as (a, b):
        for replica in (a, b):
            await poll(lambda r=replica: _serving(r.base), within=DEADLINE, what=f"the upstream on {replica.name}")
        with anyio.fail_after(90):
            async with side.client(f"{a.base}/mcp", "auto") as on_a, side.client(f"{b.base}/mcp", "auto") as on_b:
                asked = await _asked(on_a)
                # The balancer sent the retry to b: b sends it on to a, where the call waits.
                final = await on_b.session.call_tool(
                    "cb__ask_user",
                    {},
                    input_responses=_answers(asked),
                    request_state=asked.request_state,
                    allow_input_required=True,
                )
                assert isinstance(final, types.CallToolResult) and not final.is_error, final
                block = final.content[0]
                assert isinstance(block, types.TextContent) and block.text == 'user accept: {"name": "Lin"}'

                orphaned = await _asked(on_a)
                await a.kill()
                with pytest.raises(MCPError, match="another gateway replica") as refused:
                    await on_b.session.call_tool(
                        "cb__ask_user",
                        {},
                        input_responses=_answers(orphaned),
                        request_state=orphaned.request_state,
                        allow_input_required=True,
                    )
                assert "call the tool again, without requestState" in str(refused.value)
