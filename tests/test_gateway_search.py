from __future__ import annotations

import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
import numpy as np

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.search import ToolSearch
from mcp_aggregator.search.classification_queue import ClassificationState
from mcp_aggregator.search.embedder import Vectors, l2_normalise
from mcp_aggregator.search.embedding_cache import EmbeddingCache
from mcp_aggregator.settings import ServerConfig, Settings
from tests.conftest import REPO, running_gateway, settings_for, stdio_fixture

T = TypeVar("T")


async def test_tools_are_indexed_classified_and_searchable_offline(tmp_path: Path) -> None:
    search = {"embedder": "onnx-minilm", "cache_path": str(tmp_path / "embeddings.db")}
    settings = settings_for(stdio_fixture("alpha"), search=search)
    async with running_gateway(settings) as (gateway, _client):
        await gateway.wait_until(gateway.index_ready, timeout_secs=60)
        hits = await gateway.search_tools("add two numbers together", 3)
        assert hits[0].key == "alpha.add"
        assert {h.server for h in hits} == {"alpha"}
        assert await gateway.search_tools("echo", 5, server="nope") == []

        queue = gateway.indexer.queue
        assert queue is not None
        await queue.wait_settled()
        counts = gateway.classification_counts()
        assert counts[ClassificationState.CLASSIFIED.value] + counts[ClassificationState.UNCLASSIFIED.value] == len(
            gateway.catalog
        )
        classified = [e.canonical for e in gateway.catalog.entries if queue.assignments(e.canonical)]
        assert classified, "the offline classifier assigns skills"
        key = classified[0]
        skill = queue.assignments(key)[0].skill_id
        assert key in {h.key for h in await gateway.search_tools(key.split(".")[1], 10, skill=skill)}
        await gateway.flush()
        stored = {t.name: t for t in await gateway.registry.list_tools()}
        assert stored[key].is_classified and stored[key].primary_skill_id == skill


async def test_disconnected_servers_drop_out_of_search() -> None:
    settings = settings_for(stdio_fixture("alpha"), stdio_fixture("beta"))
    async with running_gateway(settings) as (gateway, _client):
        await gateway.wait_until(gateway.index_ready, timeout_secs=60)
        assert {h.server for h in await gateway.search_tools("search tool", 10)} == {"alpha", "beta"}
        await gateway.disconnect_server(gateway.ids["beta"])
        assert {h.server for h in await gateway.search_tools("search tool", 10)} == {"alpha"}
        await gateway.remove_server_by_id(gateway.ids["beta"])
        assert "beta.search" not in gateway.search


def test_embeddings_persist_in_the_data_dir_by_default(tmp_path: Path) -> None:
    settings = settings_for(search={"embedder": "onnx-minilm"}, data_dir=str(tmp_path))
    assert settings.search.cache_path == tmp_path / "embeddings.db"
    assert settings_for().search.cache_path is None, "lexical-only search embeds nothing"


class GatedEmbedder:
    """Bag-of-words vectors; a text containing ``gate_word`` blocks until ``release`` is set."""

    model_id = "gated-bow-32"
    dimension = 32

    def __init__(self, gate_word: str) -> None:
        self.gate_word = gate_word
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if any(self.gate_word in text for text in texts):
            self.entered.set()
            if not self.release.wait(timeout=30):
                raise TimeoutError("the gate was never released: the event loop was blocked")
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, sum(word.encode()) % self.dimension] += 1.0
        out[:, 0] += 1e-3
        return l2_normalise(out)


async def stuck_in_the_embedder(settings: Settings, work: Callable[[Gateway], Awaitable[T]]) -> T:
    """Run ``work`` until its embedding blocks, show the event loop still runs other tasks
    meanwhile, then let the embedding finish; ``work``'s result."""
    embedder = GatedEmbedder("numbers")
    search = ToolSearch(settings.search, embedder, cache=EmbeddingCache(None))
    async with Gateway(settings, search=search) as gateway:
        await gateway.wait_settled(30)
        await gateway.wait_until(gateway.index_ready, timeout_secs=60)
        results: list[T] = []
        progressed = anyio.Event()

        async def working() -> None:
            results.append(await work(gateway))

        async def other_work() -> None:
            await anyio.lowlevel.checkpoint()
            progressed.set()

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(working)
                with anyio.fail_after(30):
                    await anyio.to_thread.run_sync(lambda: embedder.entered.wait(30))
                assert embedder.entered.is_set()
                # The work is now stuck inside the embedder; the loop must still run tasks.
                tg.start_soon(other_work)
                with anyio.fail_after(10):
                    await progressed.wait()
                assert results == []
                embedder.release.set()
        finally:
            embedder.release.set()
            for supervisor in list(gateway.supervisors.values()):
                await supervisor.stop()
        return results[0]


async def test_the_event_loop_keeps_serving_while_a_search_embeds_its_query() -> None:
    settings = settings_for(stdio_fixture("alpha"))
    hits = await stuck_in_the_embedder(settings, lambda gateway: gateway.search_tools("add two numbers", 3))
    assert hits[0].key == "alpha.add"


async def test_the_event_loop_keeps_serving_while_an_aggregator_query_picks_its_servers() -> None:
    # Past toolSearchMinServers the aggregator's server selection embeds the question too.
    settings = settings_for(
        stdio_fixture("alpha"), stdio_fixture("beta"), sections={"aggregator": {"toolSearchMinServers": 1}}
    )
    answer = await stuck_in_the_embedder(settings, lambda gateway: gateway.query({"query": "add two numbers"}))
    metadata = answer["metadata"]
    assert isinstance(metadata, dict)
    assert metadata["selection"] == "toolSearch"


async def test_a_search_during_a_large_indexing_answers_at_once_by_words_and_says_it_is_partial() -> None:
    many = ServerConfig(
        name="many",
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", "tests.upstream.paged_server", "--tools", "600", "--page", "100"),
        cwd=str(REPO),
    )
    settings = settings_for(many, list_wait_secs=60)
    embedder = GatedEmbedder("Synthetic")  # in every tool text: the index stays 600 tools short
    search = ToolSearch(settings.search, embedder, cache=EmbeddingCache(None))
    async with Gateway(settings, search=search) as gateway:
        try:
            await gateway.wait_settled(30)
            with anyio.fail_after(30):
                await anyio.to_thread.run_sync(lambda: embedder.entered.wait(30))
            # Far more to embed than a short wait: no waiting the 60 s of list_wait_secs.
            with anyio.fail_after(20):
                hits = await gateway.search_tools("tool number 7", 3)
            assert not hits.complete
            assert (hits.pending, hits.connecting) == (600, 0)
            assert hits and all(hit.server == "many" for hit in hits)
            assert gateway.health()["index"] == "building"
        finally:
            embedder.release.set()
            for supervisor in list(gateway.supervisors.values()):
                await supervisor.stop()
