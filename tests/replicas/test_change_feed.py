"""The change feed in-process against the real PostgreSQL: notifications, a lost listener, the safety net."""

from __future__ import annotations

import anyio
import asyncpg
import pytest

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.registry import Registry, RegistrySettings
from mcp_aggregator.registry.change_feed import CHANNEL, Change, ChangeFeed, ChangeKind, change_payload, parse_change
from mcp_aggregator.settings import Settings
from mcp_aggregator.settings.server_records import spec_from_config
from tests.conftest import settings_for, stdio_fixture
from tests.replicas.cluster import PG_DSN, PG_URL

DEADLINE = 20.0


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (change_payload(ChangeKind.REGISTERED, "id-1", "mcp"), Change("registered", "id-1", "mcp")),
        (change_payload(ChangeKind.CONFIG, None, "s"), Change("config", None, "s")),
        ('{"kind":"pins","server_id":"x","schema":"mcp","extra":1}', Change("pins", "x", "mcp")),
        ('{"kind":"pins","server_id":7,"schema":"mcp"}', Change("pins", None, "mcp")),
        ('{"kind":"pins"}', None),
        ("[1, 2]", None),
        ("not json", None),
    ],
)
def test_payloads_parse_and_unknown_shapes_are_ignored(payload: str, expected: Change | None) -> None:
    assert parse_change(payload) == expected


def pg_settings(schema: str, **registry: object) -> Settings:
    base = settings_for(database_url=PG_URL)
    return base.model_copy(update={"registry": RegistrySettings(database_url=PG_URL, pg_schema=schema, **registry)})


async def test_sqlite_registry_runs_no_change_feed() -> None:
    async with Gateway(settings_for()) as gateway:
        assert gateway.change_feed is None


@pytest.mark.postgres
async def test_a_server_registered_by_another_writer_is_supervised_here(pg_schema: str) -> None:
    settings = pg_settings(pg_schema)
    async with Gateway(settings) as gateway, Registry(settings.registry) as other:
        assert gateway.change_feed is not None and gateway.change_feed.connected
        await other.register_server(spec_from_config(stdio_fixture("beta")))
        await gateway.wait_until(lambda: "beta" in gateway.supervisors, timeout_secs=DEADLINE)
        await gateway.wait_until(lambda: "beta" in gateway.exposed_servers(), timeout_secs=DEADLINE)

        record = await other.get_server_by_name("beta")
        await other.set_enabled(record.id, False)
        await gateway.wait_until(lambda: "beta" not in gateway.exposed_servers(), timeout_secs=DEADLINE)

        await other.delete_server(record.id)
        await gateway.wait_until(lambda: "beta" not in gateway.supervisors, timeout_secs=DEADLINE)


@pytest.mark.postgres
async def test_a_listener_killed_by_the_server_reconnects_and_reconciles_from_the_tables(pg_schema: str) -> None:
    settings = pg_settings(pg_schema)
    async with Gateway(settings) as gateway:
        feed = gateway.change_feed
        assert feed is not None and feed.listener_pid is not None
        first_pid, reconciles = feed.listener_pid, feed.reconciles
        conn = await asyncpg.connect(PG_DSN)
        try:
            assert await conn.fetchval("SELECT pg_terminate_backend($1)", first_pid)
        finally:
            await conn.close()
        await gateway.wait_until(
            lambda: feed.listener_pid not in (None, first_pid) and feed.reconciles > reconciles,
            timeout_secs=DEADLINE,
        )
        # The new listener hears notifications again.
        async with Registry(settings.registry) as other:
            await other.register_server(spec_from_config(stdio_fixture("gamma")))
            await gateway.wait_until(lambda: "gamma" in gateway.supervisors, timeout_secs=DEADLINE)


@pytest.mark.postgres
async def test_a_change_written_without_notification_is_caught_by_the_safety_reconcile(pg_schema: str) -> None:
    settings = pg_settings(pg_schema, reconcile_interval_secs=0.5)
    async with Gateway(settings) as gateway, Registry(settings.registry) as other:
        await other.register_server(spec_from_config(stdio_fixture("delta")))
        await gateway.wait_until(lambda: "delta" in gateway.exposed_servers(), timeout_secs=DEADLINE)
        conn = await asyncpg.connect(PG_DSN)
        try:
            # As if the notification were lost: the table changes, nobody is told.
            await conn.execute(f'UPDATE "{pg_schema}".external_servers SET enabled = false')
        finally:
            await conn.close()
        await gateway.wait_until(lambda: "delta" not in gateway.exposed_servers(), timeout_secs=DEADLINE)


@pytest.mark.postgres
async def test_a_pins_notification_makes_every_replica_reconcile(pg_schema: str) -> None:
    """The hook the tool-pins table uses: ``Registry.notify(session, ChangeKind.PINS, server_id)``."""
    settings = pg_settings(pg_schema)
    async with Gateway(settings) as gateway:
        feed = gateway.change_feed
        assert feed is not None
        before = feed.reconciles
        conn = await asyncpg.connect(PG_DSN)
        try:
            await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, change_payload(ChangeKind.PINS, None, pg_schema))
        finally:
            await conn.close()
        await gateway.wait_until(lambda: feed.reconciles > before, timeout_secs=DEADLINE)


async def _nothing() -> None:
    return None


@pytest.mark.postgres
async def test_a_follower_hears_its_own_channel_and_is_told_to_catch_up_after_every_reconnect(pg_schema: str) -> None:
    heard: list[str | None] = []
    changed = anyio.Event()

    def follower(payload: str | None) -> None:
        heard.append(payload)
        changed.set()

    async def next_heard() -> str | None:
        nonlocal changed
        with anyio.fail_after(DEADLINE):
            while not heard:
                await changed.wait()
                changed = anyio.Event()
        return heard.pop(0)

    feed = ChangeFeed(PG_URL, pg_schema, _nothing)
    feed.follow("mcp_aggregator_test_follow", follower)
    conn = await asyncpg.connect(PG_DSN)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(feed.run)
            assert await next_heard() is None  # connected: catch up from the tables
            await conn.execute("SELECT pg_notify('mcp_aggregator_test_follow', 'hello')")
            assert await next_heard() == "hello"
            first_pid = feed.listener_pid
            assert await conn.fetchval("SELECT pg_terminate_backend($1)", first_pid)
            assert await next_heard() is None  # reconnected: what was sent meanwhile is lost
            assert feed.listener_pid not in (None, first_pid)
            feed.stop()
    finally:
        await conn.close()
