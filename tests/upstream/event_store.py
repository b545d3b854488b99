"""An in-memory SSE event store, so the fixture servers' streams can be resumed (SEP-1699)."""

from __future__ import annotations

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage


class MemoryEventStore(EventStore):
    """Keeps every event of the process's life; fine for a test upstream, not for production."""

    def __init__(self) -> None:
        self._events: list[tuple[StreamId, EventId, JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(len(self._events) + 1)
        self._events.append((stream_id, event_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        if not last_event_id.isdigit() or not 0 < int(last_event_id) <= len(self._events):
            return None
        stream_id = self._events[int(last_event_id) - 1][0]
        for stream, event_id, message in self._events[int(last_event_id) :]:
            # Priming events carry no message: there is nothing to replay for them.
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id
