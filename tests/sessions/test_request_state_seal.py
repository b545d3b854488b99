from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcp_aggregator.serve.runner import replica_home
from mcp_aggregator.sessions import KeyRing, SealingKey
from mcp_aggregator.sessions.request_state_seal import RequestStateSeal, StateOwner

T0 = datetime(2026, 11, 27, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def test_a_state_says_whether_this_replica_another_or_nobody_issued_it() -> None:
    ring, clock = KeyRing([SealingKey.generate(T0)]), Clock()
    here = RequestStateSeal(lambda: ring, max_age_secs=300, clock=clock)
    there = RequestStateSeal(lambda: ring, max_age_secs=300, clock=clock)
    stranger = RequestStateSeal(lambda: KeyRing([SealingKey.generate(T0)]), max_age_secs=300, clock=clock)
    state = here.seal("tok")
    assert here.open(state).owner is StateOwner.HERE and here.open(state).token == "tok"
    assert there.open(state).owner is StateOwner.ELSEWHERE
    assert stranger.open(state).owner is StateOwner.NOBODY
    altered = state[:-2] + ("AA" if not state.endswith("AA") else "BB")
    assert here.open(altered).owner is StateOwner.NOBODY


def test_a_state_past_the_wait_is_nobodys() -> None:
    ring, clock = KeyRing([SealingKey.generate(T0)]), Clock()
    seal = RequestStateSeal(lambda: ring, max_age_secs=300, clock=clock)
    state = seal.seal("tok")
    clock.now = T0 + timedelta(seconds=301)
    assert seal.open(state).owner is StateOwner.NOBODY


def test_a_session_id_does_not_open_as_a_request_state() -> None:
    ring = KeyRing([SealingKey.generate(T0)])
    seal = RequestStateSeal(lambda: ring, max_age_secs=300, clock=Clock())
    assert seal.open(ring.seal(b'["x","tok",1795000000]', b"mcp-aggregator session id v1")).owner is StateOwner.NOBODY


def test_a_state_names_the_address_of_the_replica_holding_its_call() -> None:
    ring, clock = KeyRing([SealingKey.generate(T0)]), Clock()
    home = RequestStateSeal(lambda: ring, max_age_secs=300, clock=clock, home="http://10.0.0.5:8765")
    there = RequestStateSeal(lambda: ring, max_age_secs=300, clock=clock)
    opened = there.open(home.seal("tok"))
    assert (opened.owner, opened.token, opened.home) == (StateOwner.ELSEWHERE, "tok", "http://10.0.0.5:8765")
    assert home.open(home.seal("tok")).home is None, "its own replica answers it: nowhere to send it"
    assert home.open(there.seal("tok")).home is None, "a replica that named no address"


@pytest.mark.parametrize(
    ("replica_url", "host", "home"),
    [
        ("https://gw-1.internal:8443", "0.0.0.0", "https://gw-1.internal:8443"),
        (None, "10.0.0.5", "http://10.0.0.5:8765"),
        (None, "::1", "http://[::1]:8765"),
        (None, "0.0.0.0", None),
        (None, "::", None),
    ],
)
def test_a_replica_is_reached_at_its_replica_url_else_its_bound_address_unless_a_wildcard(
    replica_url: str | None, host: str, home: str | None
) -> None:
    assert replica_home(replica_url, host, 8765) == home
