from __future__ import annotations

from pathlib import Path

from mcp_aggregator.search.classification_queue import ClassificationState
from tests.conftest import running_gateway, settings_for, stdio_fixture


async def test_tools_are_indexed_classified_and_searchable_offline(tmp_path: Path) -> None:
    search = {"embedder": "onnx-minilm", "cache_path": str(tmp_path / "embeddings.db")}
    settings = settings_for(stdio_fixture("alpha"), search=search)
    async with running_gateway(settings) as (gateway, _client):
        await gateway.wait_until(gateway.index_ready, timeout_secs=60)
        hits = gateway.search_tools("add two numbers together", 3)
        assert hits[0].key == "alpha.add"
        assert {h.server for h in hits} == {"alpha"}
        assert gateway.search_tools("echo", 5, server="nope") == []

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
        assert key in {h.key for h in gateway.search_tools(key.split(".")[1], 10, skill=skill)}
        await gateway.flush()
        stored = {t.name: t for t in await gateway.registry.list_tools()}
        assert stored[key].is_classified and stored[key].primary_skill_id == skill


async def test_disconnected_servers_drop_out_of_search() -> None:
    settings = settings_for(stdio_fixture("alpha"), stdio_fixture("beta"))
    async with running_gateway(settings) as (gateway, _client):
        await gateway.wait_until(gateway.index_ready, timeout_secs=60)
        assert {h.server for h in gateway.search_tools("search tool", 10)} == {"alpha", "beta"}
        await gateway.disconnect_server(gateway.ids["beta"])
        assert {h.server for h in gateway.search_tools("search tool", 10)} == {"alpha"}
        await gateway.remove_server_by_id(gateway.ids["beta"])
        assert "beta.search" not in gateway.search


def test_embeddings_persist_in_the_data_dir_by_default(tmp_path: Path) -> None:
    settings = settings_for(search={"embedder": "onnx-minilm"}, data_dir=str(tmp_path))
    assert settings.search.cache_path == tmp_path / "embeddings.db"
    assert settings_for().search.cache_path is None, "lexical-only search embeds nothing"
