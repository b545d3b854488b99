"""The query-side linear map: applied to query vectors only, refused with a clear error
when its file is not a usable map."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search import SearchSettings, ToolDoc, ToolSearch
from mcp_aggregator.search.embedder import l2_normalise
from mcp_aggregator.search.query_map import QueryMap
from tests.search.conftest import FakeEmbedder


def word_dimension(word: str) -> int:
    return int(hashlib.md5(word.encode()).hexdigest(), 16) % FakeEmbedder.dimension


def moving(word: str, onto: str) -> QueryMap:
    """A map that sends the fake embedder's dimension of ``word`` onto that of ``onto``."""
    matrix = np.eye(FakeEmbedder.dimension, dtype=np.float32)
    matrix[word_dimension(word)] = 0.0
    matrix[word_dimension(word), word_dimension(onto)] = 1.0
    return QueryMap(matrix)


def test_the_identity_map_leaves_query_vectors_as_they_are() -> None:
    vectors = FakeEmbedder().embed(["read a file", "send an email"])
    np.testing.assert_allclose(QueryMap(np.eye(64)).apply(vectors), vectors, atol=1e-6)


def test_mapped_query_vectors_are_unit_length() -> None:
    rng = np.random.default_rng(0)
    mapped = QueryMap(rng.standard_normal((8, 8))).apply(l2_normalise(rng.standard_normal((5, 8))))
    np.testing.assert_allclose(np.linalg.norm(mapped, axis=1), 1.0, atol=1e-5)


async def test_the_search_ranks_by_the_mapped_query_while_tools_keep_their_vectors() -> None:
    docs = [ToolDoc(f"s.{w}", "s", w, f"{w} things", "", {}) for w in ("alpha", "beta")]
    assert len({word_dimension(w) for w in ("gamma", "alpha", "beta", "things")}) == 4
    firsts = []
    for onto in ("beta", "alpha"):
        embedder = FakeEmbedder()
        search = ToolSearch(SearchSettings(), embedder, query_map=moving("gamma", onto))
        await search.upsert(docs)
        # No word of "gamma" is in either tool: only the mapped query vector can order them.
        firsts.append(search.search("gamma", 2)[0].name)
        assert sorted(embedder.embedded[:2]) == sorted(d.dense_text() for d in docs)
        search.close()
    assert firsts == ["beta", "alpha"]


def test_a_saved_map_loads_back_within_float16_rounding(tmp_path: Path) -> None:
    matrix = np.eye(16, dtype=np.float32) + np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32) / 10
    path = tmp_path / "query_map.npy"
    QueryMap(matrix).save(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    loaded = QueryMap.load(path, expected_sha256=digest, dimension=16)
    np.testing.assert_allclose(loaded.matrix, matrix, atol=2e-3)
    assert loaded.matrix.dtype == np.float32


def test_a_missing_map_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(SearchError, match=r"query map .*absent\.npy cannot be read"):
        QueryMap.load(tmp_path / "absent.npy", expected_sha256=None, dimension=4)


def test_a_map_file_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "query_map.npy"
    QueryMap(np.eye(4)).save(path)
    with pytest.raises(SearchError, match="not the one this version of mcp-aggregator ships"):
        QueryMap.load(path, expected_sha256="0" * 64, dimension=4)


def test_a_file_that_is_not_a_numpy_array_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "query_map.npy"
    path.write_text("not an array")
    with pytest.raises(SearchError, match="is not a numpy array file"):
        QueryMap.load(path, expected_sha256=None, dimension=4)


def test_a_map_of_another_dimension_than_the_embedder_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "query_map.npy"
    QueryMap(np.eye(8)).save(path)
    with pytest.raises(SearchError, match="is 8x8 but the embedder's vectors have 384 dimensions"):
        QueryMap.load(path, expected_sha256=None, dimension=384)


@pytest.mark.parametrize(
    ("matrix", "message"),
    [(np.ones((3, 4)), "square matrix"), (np.full((2, 2), np.nan), "finite numbers")],
)
def test_a_matrix_that_cannot_map_queries_is_refused(matrix: np.ndarray, message: str) -> None:
    with pytest.raises(SearchError, match=message):
        QueryMap(matrix)
