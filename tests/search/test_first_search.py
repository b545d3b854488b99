"""The first search of a fresh gateway ranks as well as the later ones.

A client such as Claude Desktop starts the gateway over stdio, lists the tools and searches
at once, while the gateway may still be embedding the tools of a server that just
connected: the search waits for the index (bounded by ``serve.list_wait_secs``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_aggregator.facades import ScoredTool, ScoredTools, ToolRecord
from mcp_aggregator.facades.tools_domain import build_tools_domain
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.search import SearchSettings, ToolDoc, ToolSearch
from mcp_aggregator.search.embedder import Vectors
from mcp_aggregator.search.embedding_cache import EmbeddingCache
from tests.conftest import REPO, npm_server, pypi_server, settings_for, stdio_fixture
from tests.test_gateway_search import GatedEmbedder

from .conftest import FakeEmbedder

_PASSED_ENV = ("PATH", "HOME", "PYTHONPATH", "XDG_CACHE_HOME", "HF_HUB_OFFLINE")


def _gateway_command() -> str:
    script = Path(sys.executable).parent / "mcp-aggregator"
    if not script.exists():
        pytest.fail(f"{script} is missing: the package is not installed in this environment")
    return str(script)


async def test_search_right_after_listing_on_a_fresh_data_dir_ranks_the_clock_first(tmp_path: Path) -> None:
    memory = npm_server("kg", "mcp-server-memory", env={"MEMORY_FILE_PATH": str(tmp_path / "memory.json")})
    clock = pypi_server("clock", "mcp-server-time", "--local-timezone", "UTC")
    config = {
        "servers": [memory.model_dump(mode="json"), clock.model_dump(mode="json")],
        "serve": {"data_dir": str(tmp_path / "data"), "list_wait_secs": 60},
        "registry": {"database_url": f"sqlite+aiosqlite:///{tmp_path}/registry.db"},
    }
    path = tmp_path / "aggregator.yaml"
    path.write_text(yaml.safe_dump(config))
    params = StdioServerParameters(
        command=_gateway_command(),
        args=["serve", "--transport", "stdio", "--config", str(path)],
        cwd=str(REPO),
        env={name: os.environ[name] for name in _PASSED_ENV if name in os.environ},
    )
    async with Client(params, cache=None) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"tools", "clock", "kg"} <= names
        result = await client.call_tool("tools", {"cmd": "search", "params": {"query": "current time in Tokyo"}})
    answer = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert answer["ok"], answer
    hits = answer["data"]
    assert isinstance(hits, list), f"the index was still incomplete: {answer['data']}"
    assert hits[0]["name"] == "clock.get_current_time", [h["name"] for h in hits]


class _HeldEmbedder(FakeEmbedder):
    """Embeds tool texts only once ``release`` is set; tells through ``entered`` it is waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.entered.set()
        if not self.release.wait(timeout=30):
            raise TimeoutError("the test never released the embedder")
        return super().embed(texts)


async def test_tools_being_embedded_are_ranked_by_words_and_the_results_say_so() -> None:
    embedder = _HeldEmbedder()
    search = ToolSearch(SearchSettings(), embedder)
    docs = [
        ToolDoc("kg.create_entities", "kg", "create_entities", "Create entities in the knowledge graph."),
        ToolDoc("clock.get_current_time", "clock", "get_current_time", "Get the current time in a time zone."),
    ]
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(search.upsert, docs)
            await anyio.to_thread.run_sync(embedder.entered.wait)
            early = search.search("current time in Tokyo", 5)
            embedder.release.set()
    assert early.pending == 2
    assert not early.complete
    assert early[0].key == "clock.get_current_time"
    assert "current time in Tokyo" not in embedder.embedded  # words only: the query was not embedded
    later = search.search("current time in Tokyo", 5)
    assert later.complete
    assert later[0].key == "clock.get_current_time"
    search.close()


async def test_facade_search_says_the_index_is_incomplete() -> None:
    class PartlyIndexed:
        async def search(self, query: str, k: int, server: str | None, skill: str | None) -> Sequence[ScoredTool]:
            return ScoredTools([ScoredTool(ToolRecord("clock.get_current_time", "clock"), 0.5)], pending=3)

    domain = build_tools_domain(PartlyIndexed())  # type: ignore[arg-type]
    answer = await domain.dispatch({"cmd": "search", "params": {"query": "time"}})
    assert answer["count"] == 1
    assert answer["data"]["items"][0]["name"] == "clock.get_current_time"
    assert answer["data"]["incomplete"].startswith("search index incomplete: 3 tools not indexed yet")


async def test_past_the_wait_a_gateway_search_ranks_by_words_and_says_the_index_is_incomplete() -> None:
    settings = settings_for(stdio_fixture("alpha"), list_wait_secs=0)
    embedder = GatedEmbedder("integers")  # the text of alpha.add ("Add two integers.") blocks its embedding
    search = ToolSearch(settings.search, embedder, cache=EmbeddingCache(None))
    async with Gateway(settings, search=search) as gateway:
        try:
            await gateway.wait_settled(30)
            with anyio.fail_after(30):
                await anyio.to_thread.run_sync(lambda: embedder.entered.wait(30))
            early = await gateway.search_tools("add two integers", 3)
            assert early[0].key == "alpha.add"
            assert early.pending > 0 and not early.complete
            embedder.release.set()
            await gateway.wait_until(gateway.index_ready, timeout_secs=30)
            later = await gateway.search_tools("add two integers", 3)
            assert later.complete
            assert "alpha.add" in {hit.key for hit in later}
        finally:
            embedder.release.set()
