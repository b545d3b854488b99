"""What replicas share through the registry: connect intent, reported status, change notifications."""

from __future__ import annotations

import json

import anyio
import asyncpg
import pytest

from mcp_aggregator.errors import ServerExistsError, ServerNotFoundError
from mcp_aggregator.health import ServerStatus
from mcp_aggregator.registry import Registry, ServerSpec, TransportType
from mcp_aggregator.registry.change_feed import CHANNEL, asyncpg_dsn

from .conftest import Database


def spec(name: str, *, enabled: bool = True) -> ServerSpec:
    return ServerSpec(name, TransportType.HTTP, {"base_url": f"https://{name}.example.com/mcp"}, enabled=enabled)


async def test_the_connect_intent_is_stored_at_registration_and_changed_by_set_enabled(registry: Registry) -> None:
    on = await registry.register_server(spec("on"))
    off = await registry.register_server(spec("off", enabled=False))
    assert (on.enabled, off.enabled) == (True, False)
    assert (await registry.set_enabled(on.id, False)).enabled is False
    assert (await registry.get_server(on.id)).enabled is False
    with pytest.raises(ServerNotFoundError):
        await registry.set_enabled("no-such-id", True)


async def test_a_config_upsert_keeps_the_stored_intent_of_a_known_server(registry: Registry) -> None:
    (first,) = await registry.upsert_config_servers([spec("cfg")])
    await registry.set_enabled(first.id, False)
    (again,) = await registry.upsert_config_servers([spec("cfg")])
    assert again.id == first.id and again.enabled is False


async def test_a_reported_status_is_stored_whatever_the_stored_one_was(registry: Registry) -> None:
    server = await registry.register_server(spec("s"))
    # Another replica's report (no CONNECTING first): stored as reported, not refused.
    await registry.record_status(server.id, ServerStatus.CONNECTED, error_message=None)
    stored = await registry.get_server(server.id)
    assert stored.status is ServerStatus.CONNECTED and stored.connected_at is not None
    await registry.record_status(server.id, ServerStatus.ERROR, error_message="refused")
    stored = await registry.get_server(server.id)
    assert (stored.status, stored.error_message) == (ServerStatus.ERROR, "refused")
    await registry.record_status("gone", ServerStatus.CONNECTED, error_message=None)  # no-op


def test_only_postgresql_is_shared(database: Database) -> None:
    assert Registry(database.settings()).shared is database.url.startswith("postgresql")


@pytest.mark.postgres
async def test_notifications_are_sent_by_committed_writes_only(registry: Registry, database: Database) -> None:
    if not registry.shared:
        pytest.skip("SQLite sends no notifications")
    received: list[dict[str, str | None]] = []
    arrived = anyio.Event()

    def on_notify(_conn: object, _pid: int, _channel: str, payload: str) -> None:
        change = json.loads(payload)
        if change["schema"] == database.pg_schema:
            received.append(change)
            arrived.set()

    conn = await asyncpg.connect(asyncpg_dsn(database.url))
    try:
        await conn.add_listener(CHANNEL, on_notify)
        first = await registry.register_server(spec("one"))
        with pytest.raises(ServerExistsError):
            await registry.register_server(spec("one"))  # rolled back: no notification
        await registry.set_enabled(first.id, True)  # unchanged: no notification
        await registry.set_enabled(first.id, False)
        await registry.delete_server(first.id)
        with anyio.fail_after(10):
            while len(received) < 3:
                await arrived.wait()
                arrived = anyio.Event()
    finally:
        await conn.close()
    assert [(c["kind"], c["server_id"]) for c in received] == [
        ("registered", first.id),
        ("disconnect", first.id),
        ("removed", first.id),
    ]
