"""``NumpyVectorIndex``: transposed float32 blocks, grown a block at a time, searched exactly."""

from __future__ import annotations

import numpy as np

from mcp_aggregator.search.embedder import l2_normalise
from mcp_aggregator.search.row_dots import row_dots
from mcp_aggregator.search.row_table import IndexFilter
from mcp_aggregator.search.vector_index import BLOCK_COLUMNS, NumpyVectorIndex


def _unit_rows(count: int, seed: int) -> np.ndarray:
    return l2_normalise(np.random.default_rng(seed).normal(size=(count, 16)).astype(np.float32))


def test_searches_rank_exactly_as_brute_force_across_growth_replacement_and_removal() -> None:
    index = NumpyVectorIndex(16)
    truth: dict[str, np.ndarray] = {}
    for batch in range(7):  # 7 x 50 rows: made wider by each batch
        keys = [f"s{batch}.t{i}" for i in range(50)]
        vectors = _unit_rows(50, batch)
        index.upsert(keys, [f"s{batch}"] * 50, vectors)
        truth.update(zip(keys, vectors, strict=True))
    replaced = _unit_rows(5, 99)
    index.upsert([f"s3.t{i}" for i in range(5)], ["s3"] * 5, replaced)
    truth.update({f"s3.t{i}": replaced[i] for i in range(5)})
    gone = [f"s{b}.t{i}" for b in (0, 4) for i in range(0, 50, 3)]
    index.remove(gone)
    for key in gone:
        del truth[key]
    query = _unit_rows(1, 7)[0]
    names = list(truth)
    expected = np.array([truth[k] for k in names]) @ query
    best = [names[i] for i in np.argsort(-expected, kind="stable")[:10]]
    found = index.search(query, 10)
    assert [key for key, _ in found] == best
    assert np.allclose([score for _, score in found], np.sort(expected)[::-1][:10], atol=1e-5)
    assert len(index) == len(truth)
    assert np.array_equal(index.vectors(["s3.t2", "missing", "s6.t49"]), np.stack([replaced[2], truth["s6.t49"]]))


def test_a_filtered_search_never_returns_another_servers_rows() -> None:
    index = NumpyVectorIndex(16)
    index.upsert(["a.x", "b.y"], ["a", "b"], _unit_rows(2, 1))
    found = index.search(_unit_rows(1, 2)[0], 10, IndexFilter.of(servers={"b"}))
    assert [key for key, _ in found] == ["b.y"]
    assert len(index.search(_unit_rows(1, 3)[0], 100)) == 2


def test_rows_past_one_block_score_bit_for_bit_as_one_matrix_and_removal_crosses_blocks() -> None:
    rows = _unit_rows(2 * BLOCK_COLUMNS + 300, 5)
    keys = [f"s.t{i}" for i in range(len(rows))]
    index = NumpyVectorIndex(16)
    for start in range(0, len(rows), 1000):  # rounds that end inside a block and past one
        index.upsert(keys[start : start + 1000], ["s"] * len(keys[start : start + 1000]), rows[start : start + 1000])
    gone = keys[10:4500:7]  # holes in the first two blocks, filled from the last
    index.remove(gone)
    kept = [k for k in keys if k not in set(gone)]
    truth = dict(zip(keys, rows, strict=True))
    matrix = np.array([truth[k] for k in index.keys])
    query = _unit_rows(1, 8)
    top, scores = index.search_rows(query[0], 20)
    whole = row_dots(query, np.ascontiguousarray(matrix.T))[0]
    assert np.array_equal(scores, whole[top])
    assert list(top) == list(np.argsort(-whole, kind="stable")[:20])
    assert len(index) == len(kept)
    assert np.array_equal(index.vectors(kept[-3:]), np.stack([truth[k] for k in kept[-3:]]))
