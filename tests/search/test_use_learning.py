"""Learning from use over a real gateway: a facade search followed by an execute of one of
its hits is stored, and a paraphrase of the query then ranks that tool higher."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import func, select

from mcp_aggregator.cli.options import load_config
from mcp_aggregator.registry import Registry, RegistrySettings
from mcp_aggregator.search import SearchSettings, ToolSearch
from mcp_aggregator.search.embedder import NoneEmbedder
from mcp_aggregator.search.use_learner import SESSION_MEMORY, UseLearner
from mcp_aggregator.search.use_store import UseStore
from mcp_aggregator.search.use_table import search_uses
from tests.cli.conftest import run_cli
from tests.conftest import running_gateway, settings_for, stdio_fixture
from tests.serve.test_facades_through_mcp import call, indexed

QUERY = "what is the process id of the server"
PARAPHRASE = "tell me the server's process identifier"


def learning_settings(**search: Any) -> Any:
    return settings_for(
        stdio_fixture("alpha"),
        stdio_fixture("beta"),
        exposure="facades",
        search={"embedder": "onnx-minilm", "onnx_variant": "packaged", "learn_from_use": True, **search},
    )


def rank_of(found: dict[str, Any], name: str) -> int:
    return [hit["name"] for hit in found["data"]].index(name)


async def stored_uses(gateway: Any) -> list[tuple[str, str]]:
    async with UseStore(gateway.settings.registry) as store:
        return await store.since(datetime.now(UTC) - timedelta(days=1))


async def test_a_tool_run_after_a_search_ranks_higher_for_a_paraphrase_of_the_query() -> None:
    async with running_gateway(learning_settings()) as (gateway, client):
        await indexed(gateway)
        before = await call(client, "tools", "search", {"query": PARAPHRASE, "k": 10})
        # The two fixtures' pid tools are the same text; learning must lift the one behind.
        ahead, behind = sorted(["alpha.pid", "beta.pid"], key=lambda name: rank_of(before, name))

        first = await call(client, "tools", "search", {"query": QUERY, "k": 10})
        assert behind in [hit["name"] for hit in first["data"]]
        ran = await call(client, "tools", "execute", {"name": behind})
        assert ran["ok"]
        assert await stored_uses(gateway) == [(QUERY, behind)]
        assert gateway.search.use_queries(behind) == [QUERY]

        after = await call(client, "tools", "search", {"query": PARAPHRASE, "k": 10})
        assert rank_of(after, behind) < rank_of(after, ahead)
        assert rank_of(after, behind) < rank_of(before, behind)


async def test_a_tool_run_without_a_search_showing_it_teaches_nothing() -> None:
    async with running_gateway(learning_settings()) as (gateway, client):
        await indexed(gateway)
        await call(client, "tools", "search", {"query": "add two integers", "k": 2, "server": "alpha"})
        assert (await call(client, "tools", "execute", {"name": "beta.pid"}))["ok"]
        assert await stored_uses(gateway) == []
        assert gateway.search.use_queries("beta.pid") == []


async def test_learning_from_use_is_off_by_default() -> None:
    settings = settings_for(stdio_fixture("alpha"), exposure="facades", search={"embedder": "onnx-minilm"})
    assert settings.search.learn_from_use is False
    async with running_gateway(settings) as (gateway, client):
        await indexed(gateway)
        await call(client, "tools", "search", {"query": QUERY})
        assert (await call(client, "tools", "execute", {"name": "alpha.pid"}))["ok"]
        assert gateway.use_learner is None
        assert gateway.search.use_queries("alpha.pid") == []


async def test_forget_uses_deletes_the_stored_pairs_older_than_asked(tmp_path: Path) -> None:
    db = tmp_path / "registry.db"
    config = tmp_path / "aggregator.yaml"
    config.write_text(f"registry:\n  database_url: sqlite+aiosqlite:///{db}\nsearch:\n  learn_from_use: true\n")
    settings = load_config(config)
    now = datetime.now(UTC)
    async with Registry(settings.registry), UseStore(settings.registry) as store:
        await store.add(now - timedelta(days=40), "old request", "a.tool")
        await store.add(now, "new request", "b.tool")

    older = await run_cli("tools", "forget-uses", "--older-than-days", "30", "--config", str(config))
    assert older.exit_code == 0, older.output
    assert "forgot 1 search use(s)" in older.output
    every = await run_cli("tools", "forget-uses", "--config", str(config))
    assert "forgot 1 search use(s)" in every.output
    async with UseStore(settings.registry) as store, store.engine.connect() as conn:
        assert (await conn.execute(select(func.count()).select_from(search_uses))).scalar_one() == 0


async def test_forget_uses_refuses_an_age_under_one_day() -> None:
    result = await run_cli("tools", "forget-uses", "--older-than-days", "0")
    assert result.exit_code == 2
    assert "--older-than-days" in result.output


def test_a_retention_under_one_day_is_a_settings_error_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="learn_from_use_retention_days"):
        SearchSettings.model_validate({"learn_from_use_retention_days": 0})


def test_a_run_counts_only_searches_of_the_same_session_within_the_memory() -> None:
    now = [datetime(2026, 11, 27, tzinfo=UTC)]
    search = ToolSearch(SearchSettings(embedder="none"), NoneEmbedder())
    store = UseStore(RegistrySettings())  # never opened: remembering touches no database
    learner = UseLearner(search, store, timedelta(days=1), clock=lambda: now[0])
    learner.searched("s1", "first request", ["a.x", "a.y"])
    learner.searched("s1", "second request", ["a.y"])
    assert learner.query_for("s1", "a.y") == "second request"
    assert learner.query_for("s1", "a.x") == "first request"
    assert learner.query_for("s2", "a.y") is None
    assert learner.query_for("s1", "a.z") is None
    now[0] += SESSION_MEMORY + timedelta(seconds=1)
    assert learner.query_for("s1", "a.y") is None
