"""Registering, upserting, reading, transitioning and deleting servers."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

import anyio
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from mcp_aggregator.errors import (
    IllegalTransitionError,
    LimitExceededError,
    ServerExistsError,
    ServerNotFoundError,
)
from mcp_aggregator.health import ServerEvent, ServerStatus
from mcp_aggregator.registry import (
    Registry,
    ServerSource,
    ServerSpec,
    ToolSpec,
    TransportType,
    migrate,
)

from .conftest import Database

DOCS = ServerSpec(
    "docs",
    TransportType.HTTP,
    {"base_url": "https://docs.example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
    description="documentation",
    health_check_url="https://docs.example.com/health",
)
MEMORY = ServerSpec("memory", TransportType.STDIO, {"command": "mcp-server-memory", "env": {"F": "./m.json"}})


def spec(name: str) -> ServerSpec:
    return ServerSpec(name, TransportType.SSE, {"url": f"https://{name}.example.com/sse"})


async def connect(registry: Registry, server_id: str) -> None:
    await registry.apply_event(server_id, ServerEvent.CONNECT)
    await registry.apply_event(server_id, ServerEvent.CONNECT_OK)


async def test_registered_server_is_disconnected_with_config_stored_unexpanded(registry: Registry) -> None:
    server = await registry.register_server(DOCS)

    assert server.status is ServerStatus.DISCONNECTED
    assert server.source is ServerSource.API
    assert server.tool_count == 0
    assert server.connected_at is None
    assert server.registered_at.tzinfo is not None
    assert await registry.get_server(server.id) == server
    assert await registry.get_server_by_name("docs") == server
    assert server.connection_config["headers"] == {"Authorization": "Bearer ${DOCS_TOKEN}"}


async def test_duplicate_name_raises_server_exists(registry: Registry) -> None:
    await registry.register_server(DOCS)

    with pytest.raises(ServerExistsError, match="Server already exists: docs"):
        await registry.register_server(DOCS)
    assert len(await registry.list_servers()) == 1


async def test_two_racing_registrations_of_one_name_let_exactly_one_win(registry: Registry) -> None:
    outcomes: list[str] = []

    async def register() -> None:
        try:
            await registry.register_server(DOCS)
            outcomes.append("created")
        except ServerExistsError:
            outcomes.append("exists")

    async with anyio.create_task_group() as tg:
        tg.start_soon(register)
        tg.start_soon(register)

    assert sorted(outcomes) == ["created", "exists"]


async def test_registering_past_the_server_limit_raises_limit_exceeded(
    open_registry: Callable[..., Registry],
) -> None:
    async with open_registry(max_servers=2) as registry:
        await registry.register_server(spec("a"))
        await registry.register_server(spec("b"))

        with pytest.raises(LimitExceededError, match="at most 2 servers"):
            await registry.register_server(spec("c"))
        assert [s.name for s in await registry.list_servers()] == ["a", "b"]


async def test_api_registered_server_survives_reopening_the_registry(
    open_registry: Callable[..., Registry],
) -> None:
    async with open_registry() as first:
        server = await first.register_server(DOCS, tools=[ToolSpec("search")])

    async with open_registry() as second:
        assert await second.get_server(server.id) == server
        assert [t.name for t in await second.list_tools(server.id)] == ["docs.search"]


async def test_migrate_is_idempotent(database: Database) -> None:
    await migrate(database.url, database.pg_schema)
    await migrate(database.url, database.pg_schema)

    async with Registry(database.settings()) as registry:
        assert await registry.list_servers() == []


async def test_config_servers_are_upserted_by_name_keeping_id_status_and_tools(registry: Registry) -> None:
    [first] = await registry.upsert_config_servers([DOCS])
    await registry.replace_tools(first.id, [ToolSpec("search")])
    await connect(registry, first.id)
    changed = ServerSpec("docs", TransportType.SSE, {"url": "https://new.example.com/sse"}, "new")

    [second] = await registry.upsert_config_servers([changed])

    assert second.id == first.id
    assert second.source is ServerSource.CONFIG
    assert second.status is ServerStatus.CONNECTED
    assert second.tool_count == 1
    assert (second.transport_type, second.description, second.health_check_url) == (
        TransportType.SSE,
        "new",
        None,
    )
    assert second.connection_config == {"url": "https://new.example.com/sse"}


async def test_upsert_prunes_config_servers_dropped_from_the_config_but_keeps_api_servers(
    registry: Registry,
) -> None:
    await registry.upsert_config_servers([DOCS, MEMORY])
    api = await registry.register_server(spec("manual"))

    result = await registry.upsert_config_servers([MEMORY])

    assert [s.name for s in result] == ["memory"]
    assert [s.name for s in await registry.list_servers()] == ["manual", "memory"]
    assert (await registry.get_server(api.id)).source is ServerSource.API


async def test_upsert_without_prune_keeps_config_servers_missing_from_the_config(registry: Registry) -> None:
    await registry.upsert_config_servers([DOCS, MEMORY])

    await registry.upsert_config_servers([MEMORY], prune=False)

    assert [s.name for s in await registry.list_servers()] == ["docs", "memory"]


async def test_config_takes_over_an_api_server_of_the_same_name_with_a_warning(
    registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    api = await registry.register_server(DOCS)

    with caplog.at_level(logging.WARNING):
        [taken] = await registry.upsert_config_servers([DOCS])

    assert taken.id == api.id
    assert taken.source is ServerSource.CONFIG
    assert "now managed by the config" in caplog.text


async def test_upsert_past_the_server_limit_writes_nothing(open_registry: Callable[..., Registry]) -> None:
    async with open_registry(max_servers=2) as registry:
        await registry.register_server(spec("manual"))

        with pytest.raises(LimitExceededError):
            await registry.upsert_config_servers([DOCS, MEMORY])
        assert [s.name for s in await registry.list_servers()] == ["manual"]


async def test_deleting_a_server_deletes_its_tools(registry: Registry) -> None:
    doomed = await registry.register_server(DOCS, tools=[ToolSpec("a"), ToolSpec("b")])
    kept = await registry.register_server(MEMORY, tools=[ToolSpec("a")])

    await registry.delete_server(doomed.id)

    assert [s.name for s in await registry.list_servers()] == ["memory"]
    assert [t.source_server_id for t in await registry.list_tools()] == [kept.id]


async def test_unknown_server_ids_raise_server_not_found(registry: Registry) -> None:
    with pytest.raises(ServerNotFoundError):
        await registry.get_server("nope")
    with pytest.raises(ServerNotFoundError):
        await registry.get_server_by_name("nope")
    with pytest.raises(ServerNotFoundError):
        await registry.delete_server("nope")
    with pytest.raises(ServerNotFoundError):
        await registry.apply_event("nope", ServerEvent.CONNECT)
    with pytest.raises(ServerNotFoundError):
        await registry.replace_tools("nope", [])


async def test_connecting_sets_connected_at_from_the_clock(database: Database) -> None:
    moment = datetime(2025, 1, 8, 10, 0, 5, tzinfo=UTC)
    async with Registry(database.settings(), clock=lambda: moment) as registry:
        server = await registry.register_server(DOCS)
        connecting = await registry.apply_event(server.id, ServerEvent.CONNECT)
        connected = await registry.apply_event(server.id, ServerEvent.CONNECT_OK)

    assert connecting.status is ServerStatus.CONNECTING
    assert connected.status is ServerStatus.CONNECTED
    assert connected.connected_at == moment
    assert connected.registered_at == moment


async def test_connection_failure_stores_the_error_message_and_success_clears_it(registry: Registry) -> None:
    server = await registry.register_server(DOCS)
    await registry.apply_event(server.id, ServerEvent.CONNECT)

    failed = await registry.apply_event(server.id, ServerEvent.CONNECT_FAILED, error_message="refused")
    await registry.apply_event(server.id, ServerEvent.RECONNECT)
    recovered = await registry.apply_event(server.id, ServerEvent.CONNECT_OK)

    assert (failed.status, failed.error_message) == (ServerStatus.ERROR, "refused")
    assert (recovered.status, recovered.error_message) == (ServerStatus.CONNECTED, None)


async def test_illegal_event_raises_and_leaves_the_stored_state_alone(registry: Registry) -> None:
    server = await registry.register_server(DOCS)

    with pytest.raises(IllegalTransitionError):
        await registry.apply_event(server.id, ServerEvent.CONNECT_OK)
    assert (await registry.get_server(server.id)).status is ServerStatus.DISCONNECTED


async def test_list_servers_filters_by_status(registry: Registry) -> None:
    docs = await registry.register_server(DOCS)
    await registry.register_server(MEMORY)
    await connect(registry, docs.id)

    assert [s.name for s in await registry.list_servers(ServerStatus.CONNECTED)] == ["docs"]
    assert [s.name for s in await registry.list_servers(ServerStatus.DISCONNECTED)] == ["memory"]


async def test_health_result_is_stored_only_while_the_expected_status_holds(registry: Registry) -> None:
    server = await registry.register_server(DOCS)
    await connect(registry, server.id)
    checked = datetime(2025, 1, 8, 10, 30, tzinfo=UTC)

    stored = await registry.record_health(
        server.id,
        expected_status=ServerStatus.CONNECTED,
        status=ServerStatus.DEGRADED,
        consecutive_failures=2,
        checked_at=checked,
        response_time_ms=12.5,
        last_error="HTTP 500",
    )
    stale = await registry.record_health(
        server.id,
        expected_status=ServerStatus.CONNECTED,
        status=ServerStatus.ERROR,
        consecutive_failures=3,
        checked_at=checked,
        response_time_ms=None,
        last_error=None,
    )

    assert stored is not None
    assert (stored.status, stored.consecutive_failures, stored.last_error) == (
        ServerStatus.DEGRADED,
        2,
        "HTTP 500",
    )
    assert (stored.last_health_check, stored.response_time_ms) == (checked, 12.5)
    assert stale is None
    assert await registry.get_server(server.id) == stored


async def test_reset_after_restart_puts_every_server_back_to_disconnected(registry: Registry) -> None:
    docs = await registry.register_server(DOCS)
    memory = await registry.register_server(MEMORY)
    await connect(registry, docs.id)
    await registry.apply_event(memory.id, ServerEvent.CONNECT)
    await registry.apply_event(memory.id, ServerEvent.CONNECT_FAILED)

    await registry.reset_after_restart()

    assert {s.status for s in await registry.list_servers()} == {ServerStatus.DISCONNECTED}


async def test_a_registry_refuses_use_before_open_and_a_second_open(database: Database) -> None:
    registry = Registry(database.settings())
    with pytest.raises(RuntimeError, match="unopened"):
        await registry.list_servers()
    async with registry:
        pass
    with pytest.raises(RuntimeError, match="closed"):
        await registry.list_servers()
    with pytest.raises(RuntimeError, match="opens once"):
        await registry.__aenter__()


@pytest.mark.postgres
@pytest.mark.parametrize("database", ["postgres"], indirect=True)
async def test_postgres_tables_live_in_the_configured_schema(database: Database) -> None:
    async with Registry(database.settings()) as registry:
        await registry.register_server(DOCS)
    engine = create_async_engine(database.url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(
                text("SELECT table_name FROM information_schema.tables WHERE table_schema = :s ORDER BY 1"),
                {"s": database.pg_schema},
            )
            assert [r[0] for r in rows] == [
                "alembic_version",
                "approvals",
                "audit_log",
                "external_servers",
                "mcp_registry_entries",
                "mcp_registry_syncs",
                "replicas",
                "search_uses",
                "session_keys",
                "sessions",
                "tool_pins",
                "tools",
                "upstream_credentials",
            ]
    finally:
        await engine.dispose()
