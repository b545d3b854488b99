"""The lifecycle state machine: every (state, event) pair of the full product."""

from __future__ import annotations

import itertools

import pytest

from mcp_aggregator.errors import IllegalTransitionError
from mcp_aggregator.health import (
    ServerEvent,
    ServerStatus,
    can_disconnect,
    can_discover,
    can_execute,
    is_exposed,
    transition,
)

S = ServerStatus
E = ServerEvent

# Seed 003 "Valid Transitions", written out independently of the implementation's table.
LEGAL: dict[tuple[ServerStatus | None, ServerEvent], ServerStatus] = {
    (None, E.REGISTER): S.DISCONNECTED,
    (S.DISCONNECTED, E.CONNECT): S.CONNECTING,
    (S.CONNECTING, E.CONNECT_OK): S.CONNECTED,
    (S.CONNECTING, E.CONNECT_FAILED): S.ERROR,
    (S.CONNECTED, E.DISCONNECT): S.DISCONNECTED,
    (S.CONNECTED, E.HEALTH_DEGRADED): S.DEGRADED,
    (S.CONNECTED, E.HEALTH_ERROR): S.ERROR,
    (S.DEGRADED, E.HEALTH_OK): S.CONNECTED,
    (S.DEGRADED, E.HEALTH_ERROR): S.ERROR,
    (S.ERROR, E.RECONNECT): S.CONNECTING,
}
STATES: list[ServerStatus | None] = [None, *ServerStatus]
PAIRS = list(itertools.product(STATES, ServerEvent))
ILLEGAL = [pair for pair in PAIRS if pair not in LEGAL]


def test_the_product_has_ten_legal_pairs() -> None:
    assert len(PAIRS) == 54
    assert len(ILLEGAL) == 44


@pytest.mark.parametrize(("state", "event"), list(LEGAL), ids=str)
def test_legal_transition_leads_to_the_contracts_state(state: ServerStatus | None, event: ServerEvent) -> None:
    assert transition(state, event) is LEGAL[(state, event)]


@pytest.mark.parametrize(("state", "event"), ILLEGAL, ids=str)
def test_every_other_pair_raises_illegal_transition(state: ServerStatus | None, event: ServerEvent) -> None:
    with pytest.raises(IllegalTransitionError) as info:
        transition(state, event)
    assert info.value.event == event.value
    assert info.value.state == (state.value if state else "(unregistered)")


@pytest.mark.parametrize("state", [S.DEGRADED, S.ERROR])
def test_disconnecting_a_degraded_or_errored_server_is_a_refusal(state: ServerStatus) -> None:
    assert not can_disconnect(state)
    with pytest.raises(IllegalTransitionError):
        transition(state, E.DISCONNECT)


@pytest.mark.parametrize(
    ("state", "discover", "execute", "exposed", "disconnect"),
    [
        (S.DISCONNECTED, False, False, False, False),
        (S.CONNECTING, False, False, False, False),
        (S.CONNECTED, True, True, True, True),
        (S.DEGRADED, False, True, True, False),
        (S.ERROR, False, False, False, False),
    ],
)
def test_capabilities_by_state_follow_the_contract(
    state: ServerStatus, discover: bool, execute: bool, exposed: bool, disconnect: bool
) -> None:
    assert (can_discover(state), can_execute(state), is_exposed(state), can_disconnect(state)) == (
        discover,
        execute,
        exposed,
        disconnect,
    )
