"""``replace_tools`` and tool registration: one transaction, limits, identity kept."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from mcp_aggregator.errors import LimitExceededError
from mcp_aggregator.registry import Registry, ServerRecord, ServerSpec, ToolSpec, TransportType

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def server_spec(name: str = "git") -> ServerSpec:
    return ServerSpec(name, TransportType.STDIO, {"command": f"mcp-server-{name}"})


def tools(*names: str) -> list[ToolSpec]:
    return [ToolSpec(name, f"{name} things", SCHEMA) for name in names]


async def test_registering_with_tools_namespaces_them_and_counts_them(registry: Registry) -> None:
    server = await registry.register_server(server_spec(), tools=tools("git_log", "api.v2.create"))

    stored = await registry.list_tools(server.id)

    assert server.tool_count == 2
    assert [(t.name, t.original_name) for t in stored] == [
        ("git.api.v2.create", "api.v2.create"),
        ("git.git_log", "git_log"),
    ]
    assert all(t.is_external and not t.is_classified and t.skill_ids == [] for t in stored)
    assert stored[1].input_schema == SCHEMA


async def test_replacing_tools_keeps_ids_and_classification_of_unchanged_tools(registry: Registry) -> None:
    server = await registry.register_server(server_spec(), tools=tools("log", "diff"))
    [diff, log] = await registry.list_tools(server.id)
    await registry.set_tool_classification(log.id, skill_ids=["vcs", "history"], primary_skill_id="vcs")

    replaced = await registry.replace_tools(server.id, tools("log", "diff"))

    assert [t.id for t in replaced] == [diff.id, log.id]
    assert (replaced[1].is_classified, replaced[1].skill_ids, replaced[1].primary_skill_id) == (
        True,
        ["vcs", "history"],
        "vcs",
    )
    assert replaced[1].updated_at == log.updated_at


async def test_a_changed_description_keeps_the_id_but_drops_the_classification(registry: Registry) -> None:
    server = await registry.register_server(server_spec(), tools=tools("log"))
    [log] = await registry.list_tools(server.id)
    await registry.set_tool_classification(log.id, skill_ids=["vcs"], primary_skill_id="vcs")

    [updated] = await registry.replace_tools(server.id, [ToolSpec("log", "show history", SCHEMA)])

    assert updated.id == log.id
    assert updated.description == "show history"
    assert (updated.is_classified, updated.skill_ids, updated.primary_skill_id) == (False, [], None)


async def test_a_changed_input_schema_drops_the_classification(registry: Registry) -> None:
    server = await registry.register_server(server_spec(), tools=tools("log"))
    [log] = await registry.list_tools(server.id)
    await registry.set_tool_classification(log.id, skill_ids=["vcs"], primary_skill_id="vcs")

    [updated] = await registry.replace_tools(server.id, [ToolSpec("log", "log things", {"type": "object"})])

    assert updated.id == log.id
    assert not updated.is_classified


async def test_tools_no_longer_listed_are_deleted_and_new_ones_added(registry: Registry) -> None:
    server = await registry.register_server(server_spec(), tools=tools("log", "diff"))

    await registry.replace_tools(server.id, tools("diff", "status"))

    assert [t.original_name for t in await registry.list_tools(server.id)] == ["diff", "status"]
    assert (await registry.get_server(server.id)).tool_count == 2


async def test_a_name_listed_twice_counts_once_and_the_last_wins(registry: Registry) -> None:
    server = await registry.register_server(server_spec())

    await registry.replace_tools(server.id, [ToolSpec("log", "first"), ToolSpec("log", "second")])

    [log] = await registry.list_tools(server.id)
    assert log.description == "second"
    assert (await registry.get_server(server.id)).tool_count == 1


async def test_an_empty_tool_list_sets_tool_count_zero_with_a_warning(
    registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    server = await registry.register_server(server_spec(), tools=tools("log"))

    with caplog.at_level(logging.WARNING):
        assert await registry.replace_tools(server.id, []) == []

    assert (await registry.get_server(server.id)).tool_count == 0
    assert await registry.list_tools(server.id) == []
    assert "git lists no tools" in caplog.text


async def test_other_servers_tools_are_untouched(registry: Registry) -> None:
    git = await registry.register_server(server_spec("git"), tools=tools("log"))
    time = await registry.register_server(server_spec("time"), tools=tools("log", "now"))

    await registry.replace_tools(git.id, [])

    assert [t.name for t in await registry.list_tools()] == ["time.log", "time.now"]
    assert (await registry.get_server(time.id)).tool_count == 2


async def _server_with_tools(registry: Registry, name: str, count: int) -> ServerRecord:
    return await registry.register_server(server_spec(name), tools=tools(*(f"t{i}" for i in range(count))))


async def test_discovery_past_the_per_server_limit_is_refused_and_keeps_the_old_tools(
    open_registry: Callable[..., Registry],
) -> None:
    async with open_registry(max_tools_per_server=3) as registry:
        server = await _server_with_tools(registry, "git", 2)

        with pytest.raises(LimitExceededError, match="at most 3 tools per server"):
            await registry.replace_tools(server.id, tools("a", "b", "c", "d"))

        assert [t.original_name for t in await registry.list_tools(server.id)] == ["t0", "t1"]
        assert (await registry.get_server(server.id)).tool_count == 2


async def test_discovery_past_the_total_limit_is_refused(open_registry: Callable[..., Registry]) -> None:
    async with open_registry(max_total_tools=5) as registry:
        await _server_with_tools(registry, "git", 3)
        time = await _server_with_tools(registry, "time", 1)

        await registry.replace_tools(time.id, tools("a", "b"))
        with pytest.raises(LimitExceededError, match="at most 5 tools are allowed in all"):
            await registry.replace_tools(time.id, tools("a", "b", "c"))

        assert len(await registry.list_tools()) == 5


async def test_a_registration_with_too_many_tools_writes_no_server(
    open_registry: Callable[..., Registry],
) -> None:
    async with open_registry(max_tools_per_server=1) as registry:
        with pytest.raises(LimitExceededError):
            await registry.register_server(server_spec(), tools=tools("a", "b"))

        assert await registry.list_servers() == []
        assert await registry.list_tools() == []


async def test_classifying_a_deleted_tool_returns_none(registry: Registry) -> None:
    server = await registry.register_server(server_spec(), tools=tools("log"))
    [log] = await registry.list_tools(server.id)
    await registry.replace_tools(server.id, [])

    assert await registry.set_tool_classification(log.id, skill_ids=["x"], primary_skill_id=None) is None
