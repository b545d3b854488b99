"""The async engine of the registry and the migrations applied at open."""

from __future__ import annotations

import ast
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, column, event, make_url, select, table, text
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from mcp_aggregator.extras import POSTGRES, require_extra
from mcp_aggregator.registry.private_files import private_file
from mcp_aggregator.registry.sqlite_schema import SqliteSchema, is_empty
from mcp_aggregator.registry.tables import SCHEMA

MIGRATIONS = Path(__file__).parent / "migrations"
ALEMBIC_CHATTER = ("alembic.runtime.migration", "alembic.runtime.plugins")
logger = logging.getLogger(__name__)
"""Loggers with which Alembic announces its set-up and every migration at INFO."""


class _InfoToDebug(logging.Filter):
    """Logs a record at DEBUG instead of INFO: a start-up at INFO stays quiet, ``--verbose``
    still shows which migrations ran. (Alembic's plugin lines come at its import, before the
    CLI configures logging; a program that configures logging first gets them demoted too
    once this module is imported.)"""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


for _name in ALEMBIC_CHATTER:
    logging.getLogger(_name).addFilter(_InfoToDebug())


# The gateway's stores (registry, audit, past uses, approvals) each have an engine on the one
# file; their writers still meet at SQLite's lock, where this is how long one waits.
SQLITE_BUSY_TIMEOUT_MS = 30_000


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def target_schema(url: str, pg_schema: str) -> str | None:
    """The schema the tables live in: ``pg_schema`` on PostgreSQL, none on SQLite."""
    return None if is_sqlite(url) else pg_schema


def has_file(url: str) -> bool:
    """Whether ``url`` names an SQLite database file (not a memory one) another engine can open."""
    parsed = make_url(url)
    database = parsed.database
    return (
        parsed.get_backend_name() == "sqlite"
        and database not in (None, "", ":memory:")
        and not str(database).startswith("file:")
    )


def create_reader(url: str, pg_schema: str = SCHEMA) -> AsyncEngine:
    """An engine for reads beside ``create_engine``'s writer on the same SQLite file.

    Its transactions begin deferred: in WAL mode a reader sees the last commit and never waits
    for the writer, so an answer made of reads does not queue behind a write (the writer's
    one connection holds a transaction of a thousand tools while a start stores them).
    """
    schema = target_schema(url, pg_schema)
    engine = create_async_engine(
        url, execution_options={"schema_translate_map": {SCHEMA: schema}}, pool_size=2, max_overflow=2
    )
    event.listen(engine.sync_engine, "connect", _sqlite_on_connect)
    event.listen(engine.sync_engine, "begin", _sqlite_on_read_begin)
    return engine


def create_thread_reader(url: str) -> Engine:
    """A blocking engine for reads on the same SQLite file, for a worker thread.

    ``create_reader``'s driver (aiosqlite) runs each statement on its connection's thread and
    comes back through the event loop: a read of a few rows is ten trips between the threads
    (begin, the query, its rows, the cursor, the commit, the pool's reset), and on a busy
    machine each waits for a core, so an admin read took seconds in a large start while its
    queries took milliseconds. Run whole in a worker thread (``Registry`` does), a read is one
    trip there and one back. Deferred ``BEGIN`` and WAL as in ``create_reader``.
    """
    return _thread_engine(url, connections=2, spare=2, on_begin=_sqlite_on_read_begin)


def create_thread_writer(url: str) -> Engine:
    """A blocking engine for writes on an SQLite file, for a worker thread (``Registry.write``).

    Through aiosqlite a transaction of a server's 200 tools is a dozen trips between its
    thread and the event loop, and it holds SQLite's one write lock through all of them: on a
    busy machine seconds, while every other writer (a session's end) waits. Run whole in a
    worker thread it holds the lock for its statements only, and a small write (a session's
    end) is one trip. One connection, ``BEGIN IMMEDIATE``; it meets ``create_engine``'s
    writer at SQLite's lock.
    """
    return _thread_engine(url, connections=1, spare=0, on_begin=_sqlite_on_begin)


def _thread_engine(url: str, *, connections: int, spare: int, on_begin: Callable[[Connection], None]) -> Engine:
    """A blocking engine on the SQLite file behind ``url``, its ``mcp`` schema the file's own."""
    engine = create_sync_engine(
        make_url(url).set(drivername="sqlite"),
        execution_options={"schema_translate_map": {SCHEMA: None}},
        pool_size=connections,
        max_overflow=spare,
    )
    event.listen(engine, "connect", _sqlite_on_connect)
    event.listen(engine, "begin", on_begin)
    return engine


def create_engine(url: str, pg_schema: str = SCHEMA) -> AsyncEngine:
    """An async engine whose ``mcp`` schema is translated to the target schema.

    On SQLite the database file is created with mode 0600 in a 0700 folder (it holds literal
    env and header values), foreign keys are switched on (ON
    DELETE CASCADE needs them) and every transaction starts with ``BEGIN IMMEDIATE``:
    writers are serialised up front instead of failing with "database is locked" when
    two read-then-write transactions both try to upgrade their lock.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        require_extra("asyncpg", extra=POSTGRES, feature="a PostgreSQL registry (registry.database_url)")
    schema = target_schema(url, pg_schema)
    options: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        # One connection per engine: a burst queues in the pool (in order, without polling)
        # rather than in SQLite's busy handler, which polls with growing sleeps, serves no one
        # in order, and gave up after 5 s with "database is locked" (a 500 to an admin).
        options = {"pool_size": 1, "max_overflow": 0}
    engine = create_async_engine(url, execution_options={"schema_translate_map": {SCHEMA: schema}}, **options)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:" and not parsed.database.startswith("file:"):
            private_file(Path(parsed.database))
        event.listen(engine.sync_engine, "connect", _sqlite_on_connect)
        event.listen(engine.sync_engine, "begin", _sqlite_on_begin)
    return engine


def _sqlite_on_connect(dbapi_connection: Any, connection_record: object) -> None:
    # Hand transaction control to SQLAlchemy (see _sqlite_on_begin).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys = ON")
    # Readers go on beside the one writer, and a commit is an append to the log.
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


def _sqlite_on_begin(connection: Connection) -> None:
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def _sqlite_on_read_begin(connection: Connection) -> None:
    connection.exec_driver_sql("BEGIN")


async def migrate_engine(engine: AsyncEngine, pg_schema: str = SCHEMA) -> None:
    """Bring the database behind ``engine`` to the newest migration, in one transaction.

    On PostgreSQL the schema is created if missing, and concurrent starts (several
    replicas) are serialised with an advisory lock.
    """
    schema = target_schema(engine.url.render_as_string(hide_password=False), pg_schema)
    async with engine.begin() as conn:
        if schema is not None:
            await conn.execute(
                text("SELECT pg_advisory_xact_lock(hashtext(:key))"),
                {"key": f"mcp_aggregator.migrate.{schema}"},
            )
        await conn.run_sync(_upgrade, schema)


async def migrate(url: str, pg_schema: str = SCHEMA) -> None:
    """Apply the registry's migrations to the database at ``url`` (no alembic.ini needed)."""
    engine = create_engine(url, pg_schema)
    try:
        await migrate_engine(engine, pg_schema)
    finally:
        await engine.dispose()


def _assigned(path: Path) -> dict[str, Any]:
    """The module-level ``name = literal`` (or ``name: type = literal``) assignments of ``path``."""
    found: dict[str, Any] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id] = node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
    return {name: ast.literal_eval(value) for name, value in found.items() if name in ("revision", "down_revision")}


@functools.cache
def head_revisions() -> frozenset[str]:
    """The revisions no migration revises: what a database brought up to date records.

    Read from the migration files' ``revision`` and ``down_revision`` without Alembic
    (``tests/registry`` checks the answer against Alembic's own)."""
    revisions: set[str] = set()
    revised: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("[0-9]*.py"):
        assigned = _assigned(path)
        revisions.add(assigned["revision"])
        down = assigned.get("down_revision")
        revised.update(() if down is None else (down,) if isinstance(down, str) else down)
    return frozenset(revisions - revised)


def applied_revisions(connection: Connection, schema: str | None) -> frozenset[str]:
    """The revisions the database records (none when it has no version table yet)."""
    if not connection.dialect.has_table(connection, "alembic_version", schema=schema):
        return frozenset()
    versions = table("alembic_version", column("version_num"), schema=schema)
    return frozenset(connection.execute(select(versions.c.version_num)).scalars())


def _upgrade(connection: Connection, schema: str | None) -> None:
    applied = applied_revisions(connection, schema)
    if applied == head_revisions():
        return
    if schema is None and not applied:
        snapshot = SqliteSchema.read()
        if snapshot.heads == head_revisions() and is_empty(connection):
            snapshot.create(connection)
            logger.debug("created the registry's schema at %s", ", ".join(sorted(snapshot.heads)))
            return
    run_migrations(connection, schema)


def run_migrations(connection: Connection, schema: str | None) -> None:
    """Bring the database behind ``connection`` to the heads with Alembic, in the caller's transaction."""
    # Alembic (and Mako) load only when a migration is due: they cost a start ~9 MB of RSS
    # (bench/startup_memory.py), which a new SQLite file is spared by its snapshot.
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    config.attributes["schema"] = schema
    # "heads": migrations written on parallel branches (each revising the same parent) all
    # apply, whatever order they were merged in.
    command.upgrade(config, "heads")
