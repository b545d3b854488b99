"""Embeddings shared through PostgreSQL: a replica that starts later embeds nothing already known."""

from __future__ import annotations

import asyncpg
import numpy as np
import pytest

from mcp_aggregator.errors import SearchError
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.registry import RegistrySettings
from mcp_aggregator.search.embedding_cache import embed_cached
from mcp_aggregator.search.pg_embedding_cache import PostgresEmbeddingCache
from tests.conftest import settings_for, stdio_fixture
from tests.replicas.cluster import PG_DSN, PG_URL
from tests.search.conftest import FakeEmbedder

pytestmark = pytest.mark.postgres

TEXTS = ["read a file", "write a file", "list the open pull requests", "read a file"]


async def _create_schema(schema: str) -> None:
    conn = await asyncpg.connect(PG_DSN)
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
    finally:
        await conn.close()


async def test_a_second_replica_finds_every_vector_the_first_one_embedded(pg_schema: str) -> None:
    await _create_schema(pg_schema)
    first, second = PostgresEmbeddingCache(PG_URL, pg_schema), PostgresEmbeddingCache(PG_URL, pg_schema)
    try:
        embedder = FakeEmbedder()
        vectors, embedded = embed_cached(embedder, first, TEXTS)
        assert embedded == 3  # the repeated text once
        assert first.count(embedder.model_id) == 3

        newcomer = FakeEmbedder()
        again, embedded_again = embed_cached(newcomer, second, TEXTS)
        assert embedded_again == 0 and newcomer.embedded == []
        np.testing.assert_array_equal(again, vectors)

        # Writing a vector someone else wrote already is harmless (two replicas racing).
        second.put_many(embedder.model_id, [("0" * 64, vectors[0]), ("0" * 64, vectors[0])])
        assert second.get_many(embedder.model_id, ["0" * 64], embedder.dimension)["0" * 64].shape == (64,)
        assert second.get_many("another-model", ["0" * 64], embedder.dimension) == {}
    finally:
        first.close()
        second.close()


def test_an_unreachable_database_is_a_search_error_without_the_password() -> None:
    with pytest.raises(SearchError) as refused:
        PostgresEmbeddingCache("postgresql+asyncpg://user:s3cret@127.0.0.1:1/none", "mcp")
    assert "s3cret" not in str(refused.value) and "127.0.0.1:1" in str(refused.value)


async def test_a_gateway_on_a_shared_registry_keeps_its_embeddings_in_postgresql(pg_schema: str) -> None:
    settings = settings_for(stdio_fixture("alpha"), search={"embedder": "onnx-minilm"}).model_copy(
        update={"registry": RegistrySettings(database_url=PG_URL, pg_schema=pg_schema)}
    )
    async with Gateway(settings) as gateway:
        await gateway.wait_settled(30)
        await gateway.wait_until(lambda: "alpha" in gateway.exposed_servers(), timeout_secs=30)
        await gateway.wait_until(gateway.index_ready, timeout_secs=120)
        tools = len(gateway.catalog)
    assert tools > 0
    conn = await asyncpg.connect(PG_DSN)
    try:
        stored = await conn.fetchval(f'SELECT COUNT(*) FROM "{pg_schema}".embeddings')
    finally:
        await conn.close()
    assert stored >= tools
