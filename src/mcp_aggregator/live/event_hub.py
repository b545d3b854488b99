"""``EventHub``: what happens in the gateway, pushed to whoever watches (the web page's stream).

Publishing is synchronous and cheap: with nobody subscribed it is one truth test. Each
subscriber has a bounded buffer; one that reads too slowly loses the events that do not fit
(counted, and told with a ``lost`` event) rather than slowing the gateway or growing without
bound. Events carry names, states, counts and durations, never a secret: the publishers
pass only such fields (server names, scrubbed error texts, rule names, outcomes).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import anyio
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

BUFFER: Final = 256
KINDS: Final = frozenset({"state", "call", "finding", "approval", "catalog", "lost"})
"""The kinds of event the page knows; ``publish`` refuses others (a typo would be silent)."""


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    kind: str
    data: Mapping[str, Any]
    time: float

    def sse(self) -> bytes:
        """As one server-sent event (``id``, ``event``, ``data`` lines)."""
        body = orjson.dumps({**self.data, "time": self.time})
        return b"id: %d\nevent: %s\ndata: %s\n\n" % (self.id, self.kind.encode(), body)


class _Subscriber:
    __slots__ = ("lost", "send")

    def __init__(self, send: MemoryObjectSendStream[Event]) -> None:
        self.send = send
        self.lost = 0


class EventHub:
    """Fans events out to every subscriber; ``publish(kind, data)`` is the whole public API
    for publishers (the approvals, the state changes, the calls, the findings)."""

    def __init__(self, *, buffer: int = BUFFER, clock: Callable[[], float] = time.time) -> None:
        self._buffer = buffer
        self._clock = clock
        self._ids = itertools.count(1)
        self._subscribers: list[_Subscriber] = []
        self._closed = False

    @property
    def watched(self) -> bool:
        """Whether anyone is subscribed (publishers may skip building an event when not)."""
        return bool(self._subscribers)

    def publish(self, kind: str, data: Mapping[str, Any]) -> None:
        """Send ``data`` (JSON-able, no secrets) as an event of ``kind`` to every subscriber.

        Raises:
            ValueError: ``kind`` is not one of ``KINDS``.
        """
        if kind not in KINDS:
            raise ValueError(f"unknown event kind {kind!r}; one of {sorted(KINDS)}")
        if not self._subscribers:
            return
        event = Event(next(self._ids), kind, data, round(self._clock(), 3))
        for subscriber in self._subscribers:
            try:
                subscriber.send.send_nowait(event)
            except anyio.WouldBlock:
                subscriber.lost += 1

    def close(self) -> None:
        """End every subscription (the server is stopping: a stream left open would hold its
        shutdown until the browser went away); later ones end at once."""
        self._closed = True
        for subscriber in self._subscribers:
            subscriber.send.close()

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[Subscription]:
        """A subscription for as long as the block runs (or until ``close``)."""
        send, receive = anyio.create_memory_object_stream[Event](self._buffer)
        subscriber = _Subscriber(send)
        self._subscribers.append(subscriber)
        if self._closed:
            send.close()
        try:
            yield Subscription(subscriber, receive, self)
        finally:
            self._subscribers.remove(subscriber)
            send.close()
            receive.close()

    def _lost_event(self, count: int) -> Event:
        return Event(next(self._ids), "lost", {"count": count}, round(self._clock(), 3))


class Subscription:
    """The events published since subscribing, in order."""

    def __init__(self, subscriber: _Subscriber, receive: MemoryObjectReceiveStream[Event], hub: EventHub) -> None:
        self._subscriber = subscriber
        self._receive = receive
        self._hub = hub
        self.closed = False
        """True once the hub closed: ``next`` has nothing more to give."""

    async def next(self, timeout_secs: float) -> Event | None:
        """The next event, or None when none came within ``timeout_secs`` or the hub closed
        (then ``closed``); a ``lost`` event first when the buffer overflowed since the last read."""
        lost = self._subscriber.lost
        if lost:
            self._subscriber.lost = 0
            return self._hub._lost_event(lost)
        with anyio.move_on_after(timeout_secs):
            try:
                return await self._receive.receive()
            except anyio.EndOfStream:
                self.closed = True
        return None
