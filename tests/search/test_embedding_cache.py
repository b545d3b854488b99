"""``embed_cached``: each distinct new text embedded once, shortest first, rows in the caller's order."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from mcp_aggregator.search.embedding_cache import EmbeddingCache, embed_cached, text_digest
from tests.search.conftest import FakeEmbedder


def test_each_distinct_text_is_embedded_once_in_batches_of_similar_length() -> None:
    embedder = FakeEmbedder()
    cache = EmbeddingCache()
    texts = ["a much longer description of a tool", "short", "a medium text", "short", "tiny"]
    vectors, embedded = embed_cached(embedder, cache, texts, batch_size=2)
    assert embedded == 4
    assert embedder.embedded == ["tiny", "short", "a medium text", "a much longer description of a tool"]
    assert np.array_equal(vectors, embedder.embed(texts))
    again, embedded_again = embed_cached(embedder, cache, texts[::-1], batch_size=2)
    assert embedded_again == 0
    assert np.array_equal(again, vectors[::-1])
    cache.close()


def _mapped(path: Path) -> bool:
    return any(line.endswith(f" {path}") for line in Path("/proc/self/maps").read_text().splitlines())


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/maps")
def test_a_whole_catalogue_read_leaves_no_page_of_the_cache_file_mapped(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.db"
    cache = EmbeddingCache(path)
    rng = np.random.default_rng(0)
    items = [(text_digest(f"text {i}"), rng.standard_normal(8).astype(np.float32)) for i in range(3000)]
    cache.put_many("model", items)
    found = cache.get_many("model", [digest for digest, _ in items], 8)
    assert len(found) == len(items)
    assert np.array_equal(found[items[7][0]], items[7][1])
    assert not _mapped(path)
    cache.close()


def test_a_whole_catalogue_read_returns_only_the_wanted_vectors_of_the_dimension_asked() -> None:
    cache = EmbeddingCache()
    rng = np.random.default_rng(1)
    items = [(text_digest(f"text {i}"), rng.standard_normal(8).astype(np.float32)) for i in range(3000)]
    cache.put_many("model", items)
    cache.put_many("model", [(text_digest("other width"), np.ones(4, dtype=np.float32))])
    cache.put_many("other model", [(items[0][0], np.zeros(8, dtype=np.float32))])
    wanted = [digest for digest, _ in items[500:]] + [text_digest("other width"), text_digest("never cached")]
    found = cache.get_many("model", wanted, 8)
    assert sorted(found) == sorted(digest for digest, _ in items[500:])
    assert all(np.array_equal(found[digest], vector) for digest, vector in items[500:])
    cache.close()
