"""``Registry``: the repository of servers and tools, over SQLite or PostgreSQL."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from enum import Enum
from types import TracebackType
from typing import Self, TypeVar, cast

import anyio
from sqlalchemy import Engine, Table, bindparam, case, delete, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session, sessionmaker

from mcp_aggregator.errors import RegistryError, ServerExistsError, ServerNotFoundError
from mcp_aggregator.health.server_state import ServerEvent, ServerStatus, transition
from mcp_aggregator.registry.change_feed import ChangeKind, notify_change
from mcp_aggregator.registry.config import RegistrySettings
from mcp_aggregator.registry.engine import (
    create_engine,
    create_reader,
    create_thread_reader,
    create_thread_writer,
    has_file,
    is_sqlite,
    migrate_engine,
)
from mcp_aggregator.registry.limits import Limits, check_server_limit
from mcp_aggregator.registry.records import (
    ServerRecord,
    ServerSource,
    ServerSpec,
    ToolPinRecord,
    ToolRecord,
    ToolSpec,
    ToolTally,
)
from mcp_aggregator.registry.tables import ExternalServerRow, ToolPinRow, ToolRow
from mcp_aggregator.registry.tool_writer import write_tools

logger = logging.getLogger(__name__)
_T = TypeVar("_T")


class RegistryState(Enum):
    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


def utc_now() -> datetime:
    return datetime.now(UTC)


class Registry:
    """Servers and their tools, persisted; every method is one transaction.

    Use as ``async with Registry(settings) as registry``: entering creates the engine and
    applies the migrations (an unreachable or broken database raises ``RegistryError``,
    password hidden); leaving disposes of the engine. A registry opens once.
    Returns frozen records (``ServerRecord``, ``ToolRecord``), never ORM rows.

    Structural writes (register, upsert, delete, replace tools) are serialised (SQLite:
    ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock), so the limits
    hold under concurrent writers, several replicas included. The unique constraint on
    the server name is the guard against duplicates; its violation becomes
    ``ServerExistsError``.

    On PostgreSQL (``shared``) every write that changes what should run (register,
    config upsert, delete, connect intent) also sends a ``ChangeFeed`` notification in
    its transaction, so other replicas reconcile to it.
    """

    def __init__(self, settings: RegistrySettings, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._settings = settings
        self._clock = clock
        self._state = RegistryState.UNOPENED
        self._engine: AsyncEngine | None = None
        self._sessions: async_sessionmaker[AsyncSession] | None = None
        self._reader: AsyncEngine | None = None
        self._reads: async_sessionmaker[AsyncSession] | None = None
        """Reads on an SQLite file, beside the writer (``create_reader``); None: the writer's."""
        self._thread_reader: Engine | None = None
        self._thread_reads: sessionmaker[Session] | None = None
        """The admin API's polled reads on an SQLite file, whole in a worker thread (``_read``)."""
        self._thread_writer: Engine | None = None
        self._thread_writes: sessionmaker[Session] | None = None
        """The write-behind's bulk writes on an SQLite file, whole in a worker thread (``_bulk_write``)."""

    @property
    def limits(self) -> Limits:
        return self._settings.limits

    @property
    def shared(self) -> bool:
        """True when several replicas can share this registry (PostgreSQL, not an embedded SQLite file)."""
        return not is_sqlite(self._settings.database_url)

    async def notify(self, session: AsyncSession, kind: ChangeKind | str, server_id: str | None) -> None:
        """Tell the other replicas (at commit of ``session``) that what should run changed."""
        if self.shared:
            await notify_change(session, self._settings.pg_schema, kind, server_id)

    async def __aenter__(self) -> Self:
        if self._state is not RegistryState.UNOPENED:
            raise RuntimeError(f"a Registry opens once; this one is {self._state.value}")
        engine = create_engine(self._settings.database_url, self._settings.pg_schema)
        try:
            await migrate_engine(engine, self._settings.pg_schema)
        except (OSError, SQLAlchemyError) as exc:
            await engine.dispose()
            shown = engine.url.render_as_string(hide_password=True)
            raise RegistryError(f"cannot open the registry at {shown}: {exc}") from exc
        except BaseException:
            await engine.dispose()
            raise
        self._engine = engine
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        if has_file(self._settings.database_url):
            self._reader = create_reader(self._settings.database_url, self._settings.pg_schema)
            self._reads = async_sessionmaker(self._reader, expire_on_commit=False)
            self._thread_reader = create_thread_reader(self._settings.database_url)
            self._thread_reads = sessionmaker(self._thread_reader, expire_on_commit=False)
            self._thread_writer = create_thread_writer(self._settings.database_url)
            self._thread_writes = sessionmaker(self._thread_writer, expire_on_commit=False)
        self._state = RegistryState.OPEN
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._state = RegistryState.CLOSED
        for engine in (self._reader, self._engine):
            if engine is not None:
                await engine.dispose()
        for thread_engine in (self._thread_reader, self._thread_writer):
            if thread_engine is not None:
                await anyio.to_thread.run_sync(thread_engine.dispose)
        self._engine = self._reader = self._thread_reader = self._thread_writer = None
        self._sessions = self._reads = self._thread_reads = self._thread_writes = None

    @asynccontextmanager
    async def _transaction(self, *, structural: bool = False) -> AsyncIterator[AsyncSession]:
        if self._sessions is None:
            raise RuntimeError(f"the Registry is {self._state.value}, not open")
        async with self._sessions.begin() as session:
            if structural and not is_sqlite(self._settings.database_url):
                await session.execute(
                    text("SELECT pg_advisory_xact_lock(hashtext(:key))"),
                    {"key": f"mcp_aggregator.registry.{self._settings.pg_schema}"},
                )
            yield session

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """One transaction, for a part that keeps its own table here (``credentials/``)."""
        async with self._transaction() as session:
            yield session

    @asynccontextmanager
    async def read_transaction(self) -> AsyncIterator[AsyncSession]:
        """A transaction that only reads: it sees the last commit and never queues behind a
        write in progress (on PostgreSQL any pooled connection does that; on an SQLite file a
        reader beside the one writer). Write nothing in it."""
        reads = self._reads or self._sessions
        if reads is None:
            raise RuntimeError(f"the Registry is {self._state.value}, not open")
        async with reads.begin() as session:
            yield session

    async def _read(self, read: Callable[[Session], _T]) -> _T:
        """``read`` in one read-only transaction. On an SQLite file it runs whole in a worker
        thread (see ``create_thread_reader``): one trip there and back, where aiosqlite makes
        one per statement. Elsewhere in the event loop, through ``read_transaction``."""
        thread_reads = self._thread_reads
        if thread_reads is not None:
            return await anyio.to_thread.run_sync(_in_thread, thread_reads, read)
        async with self.read_transaction() as session:
            return await session.run_sync(read)

    async def write(self, work: Callable[[Session], _T]) -> _T:
        """``work`` (blocking statements) in one write transaction: on an SQLite file whole in
        a worker thread, one trip there and back (see ``create_thread_writer``); elsewhere in
        the event loop. For a small write that must not wait long (a session's end)."""
        written = await self._bulk_write(lambda session: (work(session),))
        if written is not None:
            return written[0]
        async with self._transaction() as session:
            return await session.run_sync(work)

    async def _bulk_write(self, write: Callable[[Session], _T]) -> _T | None:
        """``write`` in one write transaction on an SQLite file, whole in a worker thread (see
        ``create_thread_writer``): SQLite's write lock is held for its statements, not for a
        dozen trips through a busy event loop. None where there is no such file: the caller
        writes in the event loop (``_transaction``), where PostgreSQL's notices go too."""
        thread_writes = self._thread_writes
        if thread_writes is None:
            return None
        return await anyio.to_thread.run_sync(_in_thread, thread_writes, write)

    # servers

    async def register_server(
        self,
        spec: ServerSpec,
        *,
        tools: Sequence[ToolSpec] = (),
        source: ServerSource = ServerSource.API,
    ) -> ServerRecord:
        """Create a DISCONNECTED server (BR-001), with ``tools`` if given, atomically.

        Raises:
            ServerExistsError: the name is taken.
            LimitExceededError: past ``max_servers``, or ``tools`` past a tools limit.
        """
        async with self._transaction(structural=True) as session:
            count = await session.scalar(select(func.count()).select_from(ExternalServerRow))
            check_server_limit(self.limits, (count or 0) + 1)
            row = self._new_server_row(spec, source)
            session.add(row)
            try:
                await session.flush()
            except IntegrityError as exc:
                if "uq_external_servers_name" in str(exc) or "external_servers.name" in str(exc):
                    raise ServerExistsError(spec.name) from exc
                raise
            if tools:
                await session.run_sync(write_tools, row, tools, self.limits, self._clock())
            await self.notify(session, ChangeKind.REGISTERED, row.id)
            return row.to_record()

    async def upsert_config_servers(self, specs: Sequence[ServerSpec], *, prune: bool = True) -> list[ServerRecord]:
        """Make the config file's servers present, matched by name, in one transaction.

        A new name is registered (DISCONNECTED, source ``config``); a known one keeps its
        id, status and tools and takes the spec's description, transport, connection
        config and health URL. A server of the same name registered through the API is
        taken over by the config (a warning is logged). With ``prune``, servers that came
        from the config but are no longer in it are deleted with their tools; servers
        registered through the API are never pruned.

        Raises:
            LimitExceededError: the result would exceed ``max_servers`` (nothing written).
        """
        wanted = {spec.name: spec for spec in specs}
        async with self._transaction(structural=True) as session:
            rows = {row.name: row for row in (await session.scalars(select(ExternalServerRow))).all()}
            for name, spec in wanted.items():
                row = rows.get(name)
                if row is None:
                    session.add(self._new_server_row(spec, ServerSource.CONFIG))
                    continue
                if row.source != ServerSource.CONFIG.value:
                    logger.warning("server %s registered through the API is now managed by the config", name)
                row.source = ServerSource.CONFIG.value
                row.description = spec.description
                row.transport_type = spec.transport_type.value
                row.connection_config = dict(spec.connection_config)
                row.health_check_url = spec.health_check_url
            kept = len(rows.keys() | wanted.keys())
            if prune:
                for name, row in rows.items():
                    if name not in wanted and row.source == ServerSource.CONFIG.value:
                        logger.info("server %s is no longer in the config; removing it", name)
                        await session.delete(row)
                        kept -= 1
            check_server_limit(self.limits, kept)
            await session.flush()
            await self.notify(session, ChangeKind.CONFIG, None)
            result = await session.scalars(
                select(ExternalServerRow).where(ExternalServerRow.name.in_(wanted)).order_by(ExternalServerRow.name)
            )
            return [row.to_record() for row in result.all()]

    async def get_server(self, server_id: str) -> ServerRecord:
        """Raises: ServerNotFoundError."""

        def read(session: Session) -> ServerRecord:
            row = session.get(ExternalServerRow, server_id)
            if row is None:
                raise ServerNotFoundError(server_id)
            return row.to_record()

        return await self._read(read)

    async def get_server_by_name(self, name: str) -> ServerRecord:
        """Raises: ServerNotFoundError."""
        async with self.read_transaction() as session:
            row = await session.scalar(select(ExternalServerRow).where(ExternalServerRow.name == name))
            if row is None:
                raise ServerNotFoundError(name)
            return row.to_record()

    async def list_servers(self, status: ServerStatus | None = None) -> list[ServerRecord]:
        """All servers (or those in ``status``), ordered by name."""
        query = select(ExternalServerRow).order_by(ExternalServerRow.name)
        if status is not None:
            query = query.where(ExternalServerRow.status == status.value)
        return await self._read(lambda session: [row.to_record() for row in session.scalars(query).all()])

    async def delete_server(self, server_id: str) -> None:
        """Delete a server in any state and, by cascade, its tools (BR-008).

        Raises: ServerNotFoundError.
        """
        async with self._transaction(structural=True) as session:
            await session.delete(await _server_row(session, server_id))
            await self.notify(session, ChangeKind.REMOVED, server_id)

    async def set_enabled(self, server_id: str, enabled: bool) -> ServerRecord:
        """Store the connect intent every replica reconciles to (admin connect / disconnect).

        Raises: ServerNotFoundError.
        """
        async with self._transaction() as session:
            row = await _server_row(session, server_id, for_update=True)
            changed = row.enabled != enabled
            row.enabled = enabled
            if changed:
                await self.notify(session, ChangeKind.CONNECT if enabled else ChangeKind.DISCONNECT, server_id)
            return row.to_record()

    async def record_status(self, server_id: str, status: ServerStatus, *, error_message: str | None) -> None:
        """Store the status a replica's supervisor reached, without replaying the state machine.

        With several replicas the stored status is the last one any replica reported (each
        replica's own is its supervisor's, which the admin API shows); replaying transitions
        against another replica's writes would refuse legal local moves. No-op for a gone server.
        """
        async with self._transaction() as session:
            row = await session.get(ExternalServerRow, server_id, with_for_update=True)
            if row is None:
                return
            if status is ServerStatus.CONNECTED and row.status != ServerStatus.CONNECTED.value:
                row.connected_at = self._clock()
                row.consecutive_failures = 0
            row.status = status.value
            if status is ServerStatus.ERROR and error_message is not None:
                row.error_message = error_message
            elif status is ServerStatus.CONNECTED:
                row.error_message = None

    async def apply_event(
        self, server_id: str, event: ServerEvent, *, error_message: str | None = None
    ) -> ServerRecord:
        """Move a server along the state machine and store the new state.

        CONNECTING -> CONNECTED sets ``connected_at`` and clears ``error_message`` and the
        failure count; a move to ERROR stores ``error_message`` when given.

        Raises:
            ServerNotFoundError: no such server.
            IllegalTransitionError: ``event`` is illegal in the stored state.
        """
        async with self._transaction() as session:
            row = await _server_row(session, server_id, for_update=True)
            old = ServerStatus(row.status)
            new = transition(old, event)
            row.status = new.value
            if new is ServerStatus.CONNECTED and old is ServerStatus.CONNECTING:
                row.connected_at = self._clock()
                row.error_message = None
                row.consecutive_failures = 0
            elif new is ServerStatus.ERROR and error_message is not None:
                row.error_message = error_message
            elif new is ServerStatus.DISCONNECTED:
                row.consecutive_failures = 0
            return row.to_record()

    async def record_health(
        self,
        server_id: str,
        *,
        expected_status: ServerStatus,
        status: ServerStatus,
        consecutive_failures: int,
        checked_at: datetime,
        response_time_ms: float | None,
        last_error: str | None,
    ) -> ServerRecord | None:
        """Store one health result if the server is still in ``expected_status``.

        ``last_error=None`` keeps the stored error (it is the *most recent* error). The
        status is written as given: the caller derived it with ``apply_health_result``.
        Returns ``None`` (and writes nothing) when the server is gone or its status moved.
        """
        async with self._transaction() as session:
            row = await session.scalar(
                select(ExternalServerRow)
                .where(ExternalServerRow.id == server_id, ExternalServerRow.status == expected_status.value)
                .with_for_update()
            )
            if row is None:
                return None
            row.status = status.value
            row.consecutive_failures = consecutive_failures
            row.last_health_check = checked_at
            row.response_time_ms = response_time_ms
            if last_error is not None:
                row.last_error = last_error
            return row.to_record()

    async def reset_after_restart(self) -> None:
        """Put every server back to DISCONNECTED with no failures.

        A fresh process holds no sessions, so each server re-enters the machine as if just
        registered (``REGISTER``); call once at start, before connecting anything.
        """
        async with self._transaction() as session:
            await session.execute(
                update(ExternalServerRow).values(
                    status=transition(None, ServerEvent.REGISTER).value, consecutive_failures=0
                )
            )

    # tools

    async def replace_tools(self, server_id: str, tools: Sequence[ToolSpec]) -> list[ToolRecord]:
        """Make ``tools`` the server's whole tool list, in one transaction (BR-003).

        A name seen again keeps its id, and keeps its classification unless its
        description or input schema changed; a repeated name in ``tools`` counts once
        (the last wins); tools no longer listed are deleted; ``tool_count`` follows. An
        empty list is stored (``tool_count == 0``) with a warning.

        Raises:
            ServerNotFoundError: no such server.
            LimitExceededError: past a tools limit (nothing written).
        """
        limits, now = self.limits, self._clock()

        def write(session: Session) -> list[ToolRecord]:
            row = session.get(ExternalServerRow, server_id, with_for_update=True)
            if row is None:
                raise ServerNotFoundError(server_id)
            return write_tools(session, row, tools, limits, now)

        written = await self._bulk_write(write)
        if written is not None:
            return written
        async with self._transaction(structural=True) as session:
            return await session.run_sync(write)

    async def list_tools(self, server_id: str | None = None) -> list[ToolRecord]:
        """All tools (or one server's), ordered by namespaced name."""
        query = select(ToolRow).order_by(ToolRow.name)
        if server_id is not None:
            query = query.where(ToolRow.source_server_id == server_id)
        async with self.read_transaction() as session:
            return [row.to_record() for row in (await session.scalars(query)).all()]

    async def tool_tally(self) -> ToolTally:
        """Counts of the tools, in one query: ``/state`` is polled, and loading 10,000 rows
        for three numbers kept the event loop busy for a second each time."""
        query = select(
            func.count(ToolRow.id),
            func.coalesce(func.sum(case((ToolRow.is_classified, 1), else_=0)), 0),
            func.max(ToolRow.updated_at),
        )
        total, classified, last = await self._read(lambda session: session.execute(query).one())
        return ToolTally(int(total), int(classified), last)

    async def set_tool_classification(
        self, tool_id: str, *, skill_ids: Sequence[str], primary_skill_id: str | None
    ) -> ToolRecord | None:
        """Store a classification (BR-004); ``None`` if the tool is gone meanwhile."""
        async with self._transaction() as session:
            row = await session.get(ToolRow, tool_id, with_for_update=True)
            if row is None:
                return None
            row.skill_ids = list(skill_ids)
            row.primary_skill_id = primary_skill_id
            row.is_classified = True
            return row.to_record()

    async def set_tool_classifications(self, classified: Sequence[tuple[str, Sequence[str], str | None]]) -> None:
        """Store many classifications (tool id, skill ids, primary skill) in one transaction;
        ids of tools gone meanwhile are skipped. A start classifies thousands of tools, and a
        transaction each would keep the registry writer (and the event loop) busy for minutes."""
        if not classified:
            return
        # The table, not the ORM entity: an executemany UPDATE with a WHERE on the id.
        table = cast(Table, ToolRow.__table__)
        statement = (
            update(table)
            .where(table.c.id == bindparam("tool_id"))
            .values(skill_ids=bindparam("skills"), primary_skill_id=bindparam("primary"), is_classified=True)
        )
        rows = [{"tool_id": tid, "skills": list(skills), "primary": primary} for tid, skills, primary in classified]
        await self.write(lambda session: session.execute(statement, rows).close())

    # tool-definition pins

    async def list_tool_pins(self, server_id: str | None = None) -> list[ToolPinRecord]:
        """Every pin (or one server's), ordered by server and tool name."""
        query = select(ToolPinRow).order_by(ToolPinRow.server_id, ToolPinRow.tool_name)
        if server_id is not None:
            query = query.where(ToolPinRow.server_id == server_id)
        async with self.read_transaction() as session:
            return [row.to_record() for row in (await session.scalars(query)).all()]

    async def save_tool_pins(self, server_id: str, pins: Sequence[ToolPinRecord]) -> None:
        """Make ``pins`` the server's whole pin set (matched by tool name), in one transaction.

        A server deleted meanwhile is not an error: its pins went with it. Written with Core
        ``executemany`` statements: a start pins 10,000 tools, and an ORM object each kept the
        event loop busy (see ``tool_writer``).
        """
        now = self._clock()

        def write(session: Session) -> bool:
            if session.get(ExternalServerRow, server_id) is None:
                return False
            _write_pins(session, server_id, pins, now)
            return True

        if await self._bulk_write(write) is not None:
            return
        async with self._transaction() as session:
            if await session.run_sync(write):
                # An approval (or a first pin) made on one replica must hold on all of them.
                await self.notify(session, ChangeKind.PINS, server_id)

    def _new_server_row(self, spec: ServerSpec, source: ServerSource) -> ExternalServerRow:
        return ExternalServerRow(
            id=str(uuid.uuid4()),
            name=spec.name,
            description=spec.description,
            transport_type=spec.transport_type.value,
            connection_config=dict(spec.connection_config),
            health_check_url=spec.health_check_url,
            status=transition(None, ServerEvent.REGISTER).value,
            tool_count=0,
            registered_at=self._clock(),
            consecutive_failures=0,
            source=source.value,
            enabled=spec.enabled,
        )


def _in_thread(sessions: sessionmaker[Session], work: Callable[[Session], _T]) -> _T:
    with sessions.begin() as session:
        return work(session)


async def _server_row(session: AsyncSession, server_id: str, *, for_update: bool = False) -> ExternalServerRow:
    row = await session.get(ExternalServerRow, server_id, with_for_update=for_update)
    if row is None:
        raise ServerNotFoundError(server_id)
    return row


def _write_pins(session: Session, server_id: str, pins: Sequence[ToolPinRecord], now: datetime) -> None:
    """Make ``pins`` the server's whole pin set, inside the caller's transaction (blocking)."""
    pin_table = cast(Table, ToolPinRow.__table__)
    query = select(pin_table.c.tool_name, pin_table.c.id).where(pin_table.c.server_id == server_id)
    stored: dict[str, str] = {name: pin_id for name, pin_id in session.execute(query)}
    wanted = {pin.tool_name: pin for pin in pins}
    gone = [pin_id for name, pin_id in stored.items() if name not in wanted]
    if gone:
        session.execute(delete(pin_table).where(pin_table.c.id.in_(gone)))
    values = [
        {
            "fingerprint": pin.fingerprint,
            "definition": pin.definition,
            "pending_fingerprint": pin.pending_fingerprint,
            "pending_definition": pin.pending_definition,
            "cleared_fingerprint": pin.cleared_fingerprint,
            "updated_at": now,
        }
        for pin in wanted.values()
    ]
    known = [{"b_id": stored[name], **row} for name, row in zip(wanted, values, strict=True) if name in stored]
    if known:
        # The SET clause is the keys of the rows, but ``b_id``.
        session.execute(update(pin_table).where(pin_table.c.id == bindparam("b_id")), known)
    added = [
        {"id": str(uuid.uuid4()), "server_id": server_id, "tool_name": name, **row}
        for name, row in zip(wanted, values, strict=True)
        if name not in stored
    ]
    if added:
        session.execute(insert(pin_table), added)
