"""Fetching a registry into the database (full, then ``updated_since``), search, look-up, outages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcp_aggregator.errors import EntryNotFoundError, InstallInputError, RegistryUnreachableError
from mcp_aggregator.installs.config import McpRegistrySource
from mcp_aggregator.installs.mcp_registries import McpRegistries, SearchAnswer
from mcp_aggregator.registry import Registry
from tests.installs.local_registry import (
    LocalRegistry,
    closed_port_url,
    item,
    npm_memory,
    pypi_time,
    serving,
    with_secrets,
)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 27, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def catalogue() -> LocalRegistry:
    local = LocalRegistry()
    local.add(item(npm_memory(), updated=1))
    local.add(item(pypi_time(), updated=2))
    local.add(item(with_secrets(), updated=3))
    for n in range(150):  # more than one page of 100
        local.add(item({**npm_memory(f"io.example/filler-{n:03d}"), "description": "Filler"}, updated=4))
    return local


async def test_search_fetches_every_page_then_only_what_changed(registry: Registry) -> None:
    clock = Clock()
    async with serving(catalogue()) as local:
        source = McpRegistrySource(name="acme", url=local.url, refresh_secs=60)
        registries = McpRegistries((source,), registry, clock=clock)
        answer = await registries.search("memory")
        assert [e.item.server.name for e in answer.entries] == [
            "io.example/memory-with-keys",
            "io.github.modelcontextprotocol/server-memory",
        ]
        assert answer.problems == []
        assert [r.get("cursor") for r in local.requests] == [None, "100"]
        assert all(r["version"] == "latest" for r in local.requests)

        await registries.search("time")
        assert len(local.requests) == 2, "a fresh copy is not fetched again"

        newer = {**pypi_time(), "version": "2099.1.1", "description": "Time, newer"}
        local.add(item(newer, updated=10))
        clock.now += timedelta(seconds=61)
        answer = await registries.search("server-time")
        assert local.requests[-1]["updated_since"] == "2026-11-01T00:04:00Z"
        assert [(e.item.server.version, e.item.server.description) for e in answer.entries] == [
            ("2099.1.1", "Time, newer")
        ]
        assert len((await registries.search("")).entries) == 100, "a search answers at most 100"


async def test_search_during_an_outage_answers_from_the_copy_and_says_so(registry: Registry) -> None:
    clock = Clock()
    async with serving(catalogue()) as local:
        url = local.url
        await McpRegistries((McpRegistrySource(name="acme", url=url),), registry, clock=clock).search("")
    clock.now += timedelta(hours=1)
    down = McpRegistries((McpRegistrySource(name="acme", url=url, timeout_secs=2),), registry, clock=clock)
    answer = await down.search("memory")
    assert len(answer.entries) == 2
    assert len(answer.problems) == 1
    assert "registry 'acme'" in answer.problems[0] and "did not answer" in answer.problems[0]
    assert "showing the copy fetched 2026-11-27T00:00:00+00:00" in answer.problems[0]


async def test_look_up_asks_the_registry_and_names_what_it_lacks(registry: Registry) -> None:
    async with serving(catalogue()) as local:
        registries = McpRegistries((McpRegistrySource(name="acme", url=local.url),), registry)
        source, found = await registries.look_up("io.github.modelcontextprotocol/server-time", None)
        assert (source, found.server.name) == ("acme", "io.github.modelcontextprotocol/server-time")
        with pytest.raises(EntryNotFoundError, match=r"no server 'io\.example/nope' in registry 'acme'"):
            await registries.look_up("io.example/nope", None)
        with pytest.raises(EntryNotFoundError, match=r"no server 'io\.example/filler-001@9\.9\.9' in registry 'acme'"):
            await registries.look_up("io.example/filler-001", "9.9.9")
        with pytest.raises(InstallInputError, match="no registry named 'other' is configured"):
            await registries.look_up("io.example/filler-001", None, registry="other")
    down = McpRegistries((McpRegistrySource(name="acme", url=closed_port_url()),), registry)
    with pytest.raises(RegistryUnreachableError, match=r"registry 'acme' \(http://127.0.0.1:\d+\) did not answer"):
        await down.look_up("io.example/filler-001", None)


async def test_a_registry_answering_an_error_status_is_reported(registry: Registry) -> None:
    async with serving(LocalRegistry()) as local:
        wrong = McpRegistries((McpRegistrySource(name="acme", url=local.url + "/nothing-here"),), registry)
        answer = await wrong.search("x")
    assert answer.entries == []
    assert "answered 404 to GET /v0.1/servers" in answer.problems[0]


def names(answer: SearchAnswer) -> list[str]:
    return [e.item.server.name for e in answer.entries]


async def test_a_search_after_an_install_still_lists_the_whole_registry(registry: Registry) -> None:
    local = LocalRegistry()
    local.add(item(npm_memory("io.example/a-old"), updated=1))
    local.add(item(npm_memory("io.example/z-new"), updated=9))
    async with serving(local):
        registries = McpRegistries((McpRegistrySource(name="acme", url=local.url),), registry, clock=Clock())
        await registries.look_up("io.example/z-new", None)
        answer = await registries.search("")
    assert names(answer) == ["io.example/a-old", "io.example/z-new"]
    assert local.requests == [{"limit": "100", "version": "latest"}], "the first listing is a full one"


async def test_a_change_listed_before_an_install_is_not_lost_by_it(registry: Registry) -> None:
    clock = Clock()
    local = LocalRegistry()
    local.add(item(npm_memory("io.example/a"), updated=1))
    async with serving(local):
        registries = McpRegistries(
            (McpRegistrySource(name="acme", url=local.url, refresh_secs=60),), registry, clock=clock
        )
        await registries.search("")
        local.add(item({**npm_memory("io.example/b"), "description": "B, changed"}, updated=5))
        local.add(item(npm_memory("io.example/c"), updated=6))
        await registries.look_up("io.example/c", None)
        clock.now += timedelta(seconds=61)
        answer = await registries.search("")
    assert local.requests[-1]["updated_since"] == "2026-11-01T00:01:00Z", "from the newest entry listed, not installed"
    assert names(answer) == ["io.example/a", "io.example/b", "io.example/c"]


async def test_a_refresh_that_finds_nothing_new_still_throttles_the_next(registry: Registry) -> None:
    clock = Clock()
    async with serving(catalogue()) as local:
        registries = McpRegistries(
            (McpRegistrySource(name="acme", url=local.url, refresh_secs=60),), registry, clock=clock
        )
        await registries.search("")
        clock.now += timedelta(seconds=61)
        local.requests.clear()
        for _ in range(3):
            assert (await registries.search("memory")).problems == []
        assert len(local.requests) == 1, "one quiet refresh, then the copy is fresh again"
        clock.now += timedelta(seconds=61)
        await registries.search("")
        assert len(local.requests) == 2


async def test_during_an_outage_searches_answer_from_the_copy_and_ask_again_only_after_a_back_off(
    registry: Registry,
) -> None:
    clock = Clock()
    async with serving(catalogue()) as local:
        registries = McpRegistries(
            (McpRegistrySource(name="acme", url=local.url, refresh_secs=60),), registry, clock=clock
        )
        await registries.search("")
        local.down = True
        clock.now += timedelta(seconds=61)
        local.requests.clear()
        first = await registries.search("memory")
        assert len(first.entries) == 2
        assert first.problems[0].startswith("registry 'acme'") and "answered 503" in first.problems[0]
        again = [await registries.search("memory") for _ in range(3)]
        assert len(local.requests) == 1, "a failing registry is not asked by every search"
        assert "answered 503" in again[-1].problems[0]
        assert "asked again after 2026-11-27T00:01:31+00:00" in again[-1].problems[0]
        assert "showing the copy fetched 2026-11-27T00:00:00+00:00" in again[-1].problems[0]
        clock.now += timedelta(seconds=30)
        await registries.search("memory")
        assert len(local.requests) == 2, "asked again once the back-off ended"
        clock.now += timedelta(seconds=59)
        await registries.search("memory")
        assert len(local.requests) == 2, "the back-off doubles"
        local.down = False
        clock.now += timedelta(seconds=1)
        back = await registries.search("memory")
        assert (len(local.requests), back.problems) == (3, [])
        assert local.requests[-1]["updated_since"] == "2026-11-01T00:04:00Z"
