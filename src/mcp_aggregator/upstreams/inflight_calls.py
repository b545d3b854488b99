"""The requests in flight on one upstream session: what each is, who asked, why one was aborted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import anyio


class Abortable(Protocol):
    """Anything a drain can cancel: a cancel scope, a raw call."""

    def cancel(self) -> Any: ...


class InflightCalls:
    """Tracks in-flight requests so a disconnect can drain them, then abort the rest with a reason.

    ``on_activity`` runs after each change (the supervisor's idle clock).
    """

    def __init__(self, on_activity: Callable[[], None]) -> None:
        self._on_activity = on_activity
        self._what: dict[Abortable, str] = {}
        self._tags: dict[Abortable, object] = {}
        self._abort_reason: dict[Abortable, str] = {}
        self._idle: anyio.Event | None = None
        """Made only while ``drain`` waits for the in-flight calls to end."""

    def __len__(self) -> int:
        return len(self._what)

    def tags(self) -> list[object]:
        """The tags (callers) of in-flight requests, oldest first."""
        return list(self._tags.values())

    def track(self, scope: Abortable, what: str, tag: object = None) -> None:
        self._what[scope] = what
        if tag is not None:
            self._tags[scope] = tag
        self._on_activity()

    def untrack(self, scope: Abortable) -> None:
        self._what.pop(scope, None)
        self._tags.pop(scope, None)
        if not self._what and self._idle is not None:
            self._idle.set()
            self._idle = None
        self._on_activity()

    def abort_reason(self, scope: Abortable) -> str | None:
        """Why a drain cancelled ``scope`` (once); None when it was not a drain."""
        return self._abort_reason.pop(scope, None)

    async def drain(self, grace_secs: float, *, force: bool = False) -> int:
        """Let in-flight calls finish (up to ``grace_secs``), then cancel the rest; how many were."""
        if not force and self._what:
            self._idle = self._idle or anyio.Event()
            with anyio.move_on_after(grace_secs):
                await self._idle.wait()
        reason = "disconnect forced" if force else f"server disconnected after {grace_secs:g}s drain timeout"
        aborted = list(self._what)
        for scope in aborted:
            self._abort_reason[scope] = reason
            scope.cancel()
        return len(aborted)
