from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import anyio
import pytest

from mcp_aggregator.search import SearchSettings, ToolDoc, ToolSearch
from mcp_aggregator.search.catalog_indexer import CatalogIndexer
from mcp_aggregator.search.embedder import Vectors

from .conftest import FakeEmbedder

DOCS = [ToolDoc(f"s.tool_{i}", "s", f"tool_{i}", f"Does thing number {i}.", "A server") for i in range(6)]


class GatedEmbedder(FakeEmbedder):
    """Stops inside its second call until the test opens the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.inside_second_call = threading.Event()
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        if self.calls == 2:
            self.inside_second_call.set()
            self.gate.wait(30)
        return super().embed(texts)


async def test_embedding_progress_is_visible_while_indexing_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_aggregator.search.catalog_indexer")
    embedder = GatedEmbedder()
    settings = SearchSettings(embedder="none", embed_batch_size=2)  # "none": no classification queue
    indexed = anyio.Event()
    indexer = CatalogIndexer(settings, ToolSearch(settings, embedder), on_indexed=indexed.set)
    async with anyio.create_task_group() as tg:
        await indexer.start(tg)
        assert indexer.embedding is None
        indexer.update(DOCS)
        assert await anyio.to_thread.run_sync(embedder.inside_second_call.wait, 30)
        assert indexer.embedding == (2, 6)
        embedder.gate.set()
        with anyio.fail_after(30):
            await indexed.wait()
        assert indexer.ready()
        assert indexer.embedding is None
        tg.cancel_scope.cancel()
    logged = [r.getMessage() for r in caplog.records]
    assert "search index: embedded 2 of 6 new tool texts" in logged
    assert logged[-1] == "search index: embedded 6 of 6 new tool texts"
