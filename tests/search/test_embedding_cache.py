"""``embed_cached``: each distinct new text embedded once, shortest first, rows in the caller's order."""

from __future__ import annotations

import numpy as np

from mcp_aggregator.search.embedding_cache import EmbeddingCache, embed_cached
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
