"""``EventHub``: fan-out, order, bounded buffers and the SSE wire form."""

from __future__ import annotations

import orjson
import pytest

from mcp_aggregator.live import EventHub


async def test_a_subscriber_gets_the_events_published_after_it_subscribed_in_order() -> None:
    hub = EventHub(clock=lambda: 1.5)
    hub.publish("call", {"server": "alpha"})  # nobody listens yet: dropped
    async with hub.subscribe() as first, hub.subscribe() as second:
        assert hub.watched
        hub.publish("state", {"server": "alpha", "status": "ERROR"})
        hub.publish("call", {"server": "beta"})
        for subscription in (first, second):
            one, two = await subscription.next(1), await subscription.next(1)
            assert one is not None and two is not None
            assert (one.kind, dict(one.data)) == ("state", {"server": "alpha", "status": "ERROR"})
            assert (two.kind, two.data["server"]) == ("call", "beta")
            assert two.id == one.id + 1
        assert await first.next(0.01) is None
    assert not hub.watched


async def test_a_slow_subscriber_loses_what_does_not_fit_and_is_told_how_much() -> None:
    hub = EventHub(buffer=2)
    async with hub.subscribe() as subscription:
        for n in range(5):
            hub.publish("call", {"n": n})
        lost = await subscription.next(1)
        assert lost is not None and (lost.kind, lost.data["count"]) == ("lost", 3)
        kept = [await subscription.next(1) for _ in range(2)]
        assert [e.data["n"] for e in kept if e is not None] == [0, 1]


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown event kind 'cal'"):
        EventHub().publish("cal", {})


async def test_an_event_is_written_as_one_server_sent_event() -> None:
    hub = EventHub(clock=lambda: 2.0)
    async with hub.subscribe() as subscription:
        hub.publish("approval", {"id": "a1", "status": "pending"})
        event = await subscription.next(1)
    assert event is not None
    head, data = event.sse().decode().split("data: ")
    assert head == f"id: {event.id}\nevent: approval\n"
    assert orjson.loads(data) == {"id": "a1", "status": "pending", "time": 2.0}


async def test_closing_the_hub_ends_every_subscription_and_any_made_later() -> None:
    hub = EventHub()
    async with hub.subscribe() as subscription:
        hub.close()
        assert await subscription.next(5) is None
        assert subscription.closed
    async with hub.subscribe() as late:
        assert await late.next(5) is None
        assert late.closed
