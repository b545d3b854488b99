"""Registry changes from other replicas: PostgreSQL ``LISTEN/NOTIFY`` plus a safety reconcile.

Every registry write that changes what should run sends ``NOTIFY mcp_aggregator_registry``
in its own transaction (so a notification exists exactly when the change committed), with a
small JSON payload ``{"kind", "server_id", "schema"}``. Each replica runs one ``ChangeFeed``:
it listens on a dedicated asyncpg connection and calls ``reconcile`` (debounced) after
notifications for its schema, after every (re)connect of the listener (notifications sent
while it was away are lost, so it catches up from the tables), and every
``reconcile_interval_secs`` as a safety net. Other rooms may ``follow`` channels of their own
on the same connection (held calls' decisions do).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskStatus
from sqlalchemy import make_url, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from mcp_aggregator.errors import AggregatorError
from mcp_aggregator.extras import POSTGRES, require_extra

if TYPE_CHECKING:
    import asyncpg

logger = logging.getLogger(__name__)

CHANNEL = "mcp_aggregator_registry"
LISTENER_APPLICATION_NAME = "mcp_aggregator_change_feed"
_RECONNECT_BACKOFF_SECS = (0.2, 0.5, 1.0, 2.0, 5.0)


class ChangeKind(StrEnum):
    """What changed; receivers reconcile from the tables whatever the kind, so it is informational."""

    REGISTERED = "registered"
    REMOVED = "removed"
    CONFIG = "config"
    CONNECT = "connect"
    DISCONNECT = "disconnect"
    PINS = "pins"


@dataclass(frozen=True, slots=True)
class Change:
    kind: str
    server_id: str | None
    schema: str


def change_payload(kind: ChangeKind | str, server_id: str | None, schema: str) -> str:
    return json.dumps({"kind": str(kind), "server_id": server_id, "schema": schema}, separators=(",", ":"))


def parse_change(payload: str) -> Change | None:
    """The change a payload describes, or ``None`` for a payload this version does not understand."""
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str) or not isinstance(data.get("schema"), str):
        return None
    server_id = data.get("server_id")
    return Change(data["kind"], server_id if isinstance(server_id, str) else None, data["schema"])


async def notify_change(session: AsyncSession, schema: str, kind: ChangeKind | str, server_id: str | None) -> None:
    """Queue a notification in ``session``'s transaction (PostgreSQL delivers it at commit).

    Call it from any registry write that changes what replicas should run (the tool-pins
    table included); receivers re-read the tables, so the payload only has to be small.
    """
    await session.execute(
        text("SELECT pg_notify(:channel, :payload)"),
        {"channel": CHANNEL, "payload": change_payload(kind, server_id, schema)},
    )


def asyncpg_dsn(database_url: str) -> str:
    """The libpq-style DSN asyncpg wants, from the registry's SQLAlchemy URL."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


Reconcile = Callable[[], Awaitable[object]]
Follower = Callable[[str | None], None]
"""Told a payload on its channel, or ``None``: the listener (re)connected, catch up."""


def _tell(followers: list[Follower], payload: str | None) -> None:
    for follower in followers:
        try:
            follower(payload)
        except Exception:
            # One follower's fault must neither end the feed nor starve the others.
            logger.exception("a change feed follower failed")


def _relay(followers: list[Follower]) -> Callable[[object, int, str, str], None]:
    def on_notify(_conn: object, _pid: int, _channel: str, payload: str) -> None:
        _tell(followers, payload)

    return on_notify


class ChangeFeed:
    """Listens for registry changes and reconciles this replica to the tables.

    ``run`` it in the gateway's task group with ``await tg.start(feed.run)``: it reports
    started once the first listener connection is up (or its first attempt failed: the
    replica still serves, and keeps retrying). ``reconcile`` is never called concurrently
    with itself; notifications arriving while one runs fold into one more run.
    """

    def __init__(
        self,
        database_url: str,
        schema: str,
        reconcile: Reconcile,
        *,
        reconcile_interval_secs: float = 30.0,
        debounce_secs: float = 0.05,
        on_reconciled: Callable[[], None] = lambda: None,
    ) -> None:
        require_extra("asyncpg", extra=POSTGRES, feature="the change feed of a PostgreSQL registry")
        self._dsn = asyncpg_dsn(database_url)
        self._schema = schema
        self._reconcile = reconcile
        self._interval = reconcile_interval_secs
        self._debounce = debounce_secs
        self._on_reconciled = on_reconciled
        self._wake = anyio.Event()
        self._scope = anyio.CancelScope()
        self._followers: dict[str, list[Follower]] = {}
        self.connected = False
        self.reconciles = 0
        """Completed reconciles (for tests and metrics)."""
        self.listener_pid: int | None = None
        """The backend pid of the listener connection while it is up."""

    def request_reconcile(self) -> None:
        self._wake.set()

    def follow(self, channel: str, follower: Follower) -> None:
        """Also listen on ``channel`` (on the same connection), before ``run``: ``follower``
        gets each notification's payload, and ``None`` after every (re)connect of the listener
        (what was sent while it was away is lost: the follower catches up from its table).
        It runs on the event loop's callback: keep it quick (set an event)."""
        self._followers.setdefault(channel, []).append(follower)

    def stop(self) -> None:
        """End ``run`` (idempotent): a stopping gateway must not start upstreams any more."""
        self._scope.cancel()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with self._scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._reconcile_loop)
                await self._listen_forever(task_status)

    async def _listen_forever(self, task_status: TaskStatus[None]) -> None:
        # Imported here, not at the top: only a PostgreSQL registry has a change feed, and
        # asyncpg cost every start ~2.5 MB of RSS; ``__init__`` has checked it is installed.
        import asyncpg

        started = False
        failures = 0
        while True:
            try:
                conn = await asyncpg.connect(self._dsn, server_settings={"application_name": LISTENER_APPLICATION_NAME})
            except (OSError, asyncpg.PostgresError) as exc:
                delay = _RECONNECT_BACKOFF_SECS[min(failures, len(_RECONNECT_BACKOFF_SECS) - 1)]
                failures += 1
                logger.warning("registry change feed cannot connect (%s); retrying in %.1fs", exc, delay)
                if not started:
                    task_status.started()
                    started = True
                await anyio.sleep(delay)
                continue
            failures = 0
            try:
                await self._hold(conn, task_status if not started else None)
                started = True
            finally:
                self.connected = False
                self.listener_pid = None
                conn.terminate()
            logger.warning("registry change feed lost its connection; reconnecting")

    async def _hold(self, conn: asyncpg.Connection, task_status: TaskStatus[None] | None) -> None:
        import asyncpg

        """Listen on ``conn`` until it closes; catch up from the tables first."""
        closed = anyio.Event()

        def on_notify(_conn: object, _pid: int, _channel: str, payload: str) -> None:
            change = parse_change(payload)
            if change is not None and change.schema == self._schema:
                self._wake.set()

        conn.add_termination_listener(lambda _conn: closed.set())
        await conn.add_listener(CHANNEL, on_notify)
        for channel, followers in self._followers.items():
            await conn.add_listener(channel, _relay(followers))
        self.connected = True
        self.listener_pid = conn.get_server_pid()
        self._wake.set()  # anything committed while no listener was up is only in the tables
        for followers in self._followers.values():
            _tell(followers, None)
        if task_status is not None:
            task_status.started()
        while not closed.is_set():
            with anyio.move_on_after(self._interval):
                await closed.wait()
            if closed.is_set():
                return
            # A half-open TCP connection would never report its end: probe it.
            try:
                with anyio.fail_after(max(1.0, self._interval / 2)):
                    await conn.fetchval("SELECT 1")
            except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                logger.warning("registry change feed probe failed: %s", exc)
                return

    async def _reconcile_loop(self) -> None:
        while True:
            with anyio.move_on_after(self._interval):
                await self._wake.wait()
            # Let a burst of writes (register + connect + pins) land before reading the tables.
            await anyio.sleep(self._debounce)
            self._wake = anyio.Event()
            try:
                await self._reconcile()
            except (AggregatorError, SQLAlchemyError, OSError) as exc:
                logger.warning("reconcile after a registry change failed: %s", exc)
            except Exception:
                # Top-level guard of a background loop: one bad reconcile must not end the feed.
                logger.exception("reconcile after a registry change failed")
            self.reconciles += 1
            self._on_reconciled()
