"""A 2026-07-28 client's retry (``requestState``) that reaches another replica is refused at
once, telling the client to call again; the gateway's own state is sealed."""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from mcp_aggregator.relay.parked_calls import STATE_PREFIX, is_parked_state
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.surfaces import build_surface
from mcp_aggregator.sessions import KeyRing, SealingKey
from mcp_aggregator.sessions.request_state_seal import RequestStateSeal
from tests.conftest import serving_gateway, settings_for
from tests.relay.test_input_requests import ClientSide, callbacks_upstream, text

RING = KeyRing([SealingKey.generate(datetime(2026, 11, 27, tzinfo=UTC))])


def _seal() -> RequestStateSeal:
    return RequestStateSeal(lambda: RING, max_age_secs=300, clock=lambda: datetime.now(UTC))


async def test_a_retry_reaching_another_replica_is_refused_at_once_and_the_right_one_answers_it() -> None:
    side = ClientSide()
    async with serving_gateway(settings_for(callbacks_upstream("legacy"))) as (gateway, here):
        here.parked.seal = _seal()
        elsewhere = GatewayServer(gateway, build_surface(gateway))
        elsewhere.parked.seal = _seal()  # the same keys, another instance: another replica
        async with anyio.create_task_group() as tg:
            await tg.start(elsewhere.run)
            async with side.client(here.server, "auto") as client, side.client(elsewhere.server, "auto") as other:
                first = await client.session.call_tool("cb__ask_user", {}, allow_input_required=True)
                assert isinstance(first, types.InputRequiredResult) and first.input_requests is not None
                state = first.request_state
                assert state is not None and is_parked_state(state)
                assert "parked" not in state.removeprefix(STATE_PREFIX), "the token is sealed, not shown"
                [key] = first.input_requests
                answer = {key: types.ElicitResult(action="accept", content={"name": "Lin"})}

                with anyio.fail_after(5), pytest.raises(MCPError, match="another gateway replica") as refused:
                    await other.session.call_tool(
                        "cb__ask_user", {}, input_responses=answer, request_state=state, allow_input_required=True
                    )
                assert "call the tool again, without requestState" in str(refused.value)
                tampered = state[:-3] + ("AAA" if not state.endswith("AAA") else "BBB")
                with anyio.fail_after(5), pytest.raises(MCPError, match="not one this gateway issued"):
                    await client.session.call_tool(
                        "cb__ask_user", {}, input_responses=answer, request_state=tampered, allow_input_required=True
                    )

                final = await client.session.call_tool(
                    "cb__ask_user", {}, input_responses=answer, request_state=state, allow_input_required=True
                )
                assert isinstance(final, types.CallToolResult)
                assert text(final) == 'user accept: {"name": "Lin"}'
            tg.cancel_scope.cancel()
