"""Replicas' heartbeats on SQLite and PostgreSQL (migration 0016's ``replicas``): a replica's
row is written and refreshed, made again once removed, deleted by a clean stop, and pruned a
day after it was last seen; the loop runs its hooks after every beat. Bad heartbeat settings
are refused naming the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import anyio
import pytest

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.registry import Registry, RegistrySettings, migrate
from mcp_aggregator.registry.heartbeat import Heartbeat, HeartbeatState
from mcp_aggregator.registry.replica_book import ReplicaBook, ReplicaSeen
from mcp_aggregator.settings.loader import parse_settings
from tests.registry.conftest import Database
from tests.registry.test_audit_migration import tables, to_revision

T0 = datetime(2026, 11, 29, 22, 0, tzinfo=UTC)
DEADLINE = 10


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


async def test_0016_makes_the_replicas_table_and_its_downgrade_drops_it(database: Database) -> None:
    await migrate(database.url, database.pg_schema)
    assert "replicas" in await tables(database)
    await to_revision(database, "0015", down=True)
    assert "replicas" not in await tables(database)
    assert "approvals" in await tables(database)
    await migrate(database.url, database.pg_schema)
    assert "replicas" in await tables(database)


async def test_a_replicas_row_is_written_refreshed_and_deleted_by_a_clean_stop(database: Database) -> None:
    clock = Clock()
    settings = database.settings()
    async with Registry(settings), ReplicaBook(settings) as book, Heartbeat(settings, "r1", clock=clock) as heart:
        await heart.announce()
        clock.now += timedelta(seconds=5)
        heart.home = "http://127.0.0.1:8801"
        await heart.announce()
        assert await book.listed() == [ReplicaSeen("r1", "http://127.0.0.1:8801", T0, T0 + timedelta(seconds=5))]
        await heart.stop()
        assert await book.listed() == []
        assert heart.state is HeartbeatState.STOPPED
        await heart.announce()  # stopped: writes nothing
        assert await book.listed() == []


async def test_a_replica_taken_for_lost_that_still_lives_is_written_again_and_old_rows_are_pruned(
    database: Database,
) -> None:
    clock = Clock()
    settings = database.settings()
    async with Registry(settings), ReplicaBook(settings) as book, Heartbeat(settings, "r1", clock=clock) as heart:
        await book.beat(ReplicaSeen("gone", None, T0 - timedelta(days=2), T0 - timedelta(days=1, seconds=1)))
        await heart.announce()
        assert await book.remove("r1") and not await book.remove("r1")
        await heart.announce()
        assert [seen.id for seen in await book.listed()] == ["r1", "gone"]
        assert await book.prune(T0 - timedelta(days=1)) == 1
        assert [seen.id for seen in await book.listed()] == ["r1"]


async def test_the_loop_beats_then_runs_its_hooks_until_stopped(database: Database) -> None:
    settings = database.settings().model_copy(update={"heartbeat_secs": 0.01})
    clock = Clock()
    async with Registry(settings), ReplicaBook(settings) as book, Heartbeat(settings, "r1", clock=clock) as heart:
        beats = anyio.Event()
        seen: list[datetime] = []

        async def after() -> None:
            [row] = await book.listed()
            seen.append(row.last_seen)
            clock.now += timedelta(seconds=1)
            if len(seen) == 3:
                beats.set()

        async def failing() -> None:
            raise RuntimeError("a hook that fails does not stop the heartbeat")

        heart.after_beat.extend([failing, after])
        async with anyio.create_task_group() as tg:
            await tg.start(heart.run)
            with anyio.fail_after(DEADLINE):
                await beats.wait()
            await heart.stop()
        assert seen[:3] == [T0, T0 + timedelta(seconds=1), T0 + timedelta(seconds=2)]
        assert await book.listed() == []


def test_a_heartbeat_is_every_5_s_and_a_replica_lost_after_three() -> None:
    settings = RegistrySettings()
    assert (settings.heartbeat_secs, settings.lost_after_secs) == (5.0, 15.0)
    assert RegistrySettings(heartbeat_secs=2).lost_after_secs == 6.0
    assert RegistrySettings(heartbeat_secs=2, replica_lost_secs=4).lost_after_secs == 4.0


@pytest.mark.parametrize(
    ("yaml", "error"),
    [
        ("registry: {heartbeat_secs: 0}", "registry.heartbeat_secs: Input should be greater than 0"),
        ("registry: {heartbeat_secs: 301}", "registry.heartbeat_secs: Input should be less than or equal to 300"),
        ("registry: {heartbeat_secs: often}", "registry.heartbeat_secs: Input should be a valid number"),
        ("registry: {replica_lost_secs: -1}", "registry.replica_lost_secs: Input should be greater than 0"),
        (
            "registry: {heartbeat_secs: 5, replica_lost_secs: 9}",
            "registry.replica_lost_secs: must be at least twice heartbeat_secs (10 s), or a live replica whose "
            "beat is a little late is taken for lost; got 9",
        ),
        (
            "registry: {replica_lost_secs: 7}",
            "registry.replica_lost_secs: must be at least twice heartbeat_secs (10 s)",
        ),
        ("registry: {heartbeat: 5}", "registry.heartbeat: unknown field"),
    ],
)
def test_a_bad_heartbeat_setting_is_refused_naming_its_field(yaml: str, error: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_settings(yaml)
    assert error in str(refused.value)
