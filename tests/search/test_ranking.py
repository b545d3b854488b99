from __future__ import annotations

import numpy as np
import pytest

from mcp_aggregator.search.ranking import (
    groups_by_best_row,
    normalise_query,
    reciprocal_rank_fusion,
    step_scores,
    sub_queries,
    top_rows,
)


def _rows(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.intp)


@pytest.mark.parametrize(
    ("sims", "expected"),
    [
        ([[0.8], [0.2]], [0.8, 0.2]),
        ([[0.4, 0.9, 0.1], [0.6, 0.2, 0.3]], [0.65, 0.45]),
        ([[0.0, -0.5, -0.2]], [-0.1]),
    ],
)
def test_step_scores_average_the_whole_query_with_the_best_step(sims: list[list[float]], expected: list[float]) -> None:
    assert step_scores(np.array(sims, dtype=np.float32)) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("rankings", "size", "expected"),
    [
        ([], 2, [0.0, 0.0]),
        ([[1]], 3, [0.0, 1 / 61, 0.0]),
        ([[0, 2], [2, 0]], 3, [1 / 61 + 1 / 62, 0.0, 1 / 62 + 1 / 61]),
    ],
)
def test_rank_fusion_sums_reciprocal_ranks_per_row(rankings: list[list[int]], size: int, expected: list[float]) -> None:
    assert reciprocal_rank_fusion([_rows(r) for r in rankings], size).tolist() == pytest.approx(expected)


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ([1.0, 1.0], [1 / 61 + 1 / 62, 1 / 62 + 1 / 61]),
        ([1.0, 2.0], [1 / 61 + 2 / 62, 1 / 62 + 2 / 61]),
        ([1.0, 0.0], [1 / 61, 1 / 62]),
    ],
)
def test_rank_fusion_scales_each_ranking_by_its_weight(weights: list[float], expected: list[float]) -> None:
    fused = reciprocal_rank_fusion([_rows([0, 1]), _rows([1, 0])], 2, weights=weights)
    assert fused.tolist() == pytest.approx(expected)


@pytest.mark.parametrize(
    ("scores", "groups", "order"),
    [
        ([], [], []),
        ([0.1, 0.3, 0.5], [0, 1, 0], [0, 1]),
        ([0.2, 0.2], [1, 0], [0, 1]),
        ([0.1, 0.4, 0.9, 0.5], [2, 1, 1, 0], [1, 0, 2]),
    ],
)
def test_groups_rank_by_their_best_row_with_ties_by_the_lower_group(
    scores: list[float], groups: list[int], order: list[int]
) -> None:
    assert groups_by_best_row(np.array(scores), _rows(groups)).tolist() == order


@pytest.mark.parametrize(
    ("scores", "rows", "k", "positions"),
    [
        ([0.1, 0.5, 0.3], [7, 8, 9], 2, [1, 2]),
        ([0.5, 0.5, 0.9], [9, 4, 6], 3, [2, 1, 0]),
        ([0.5], [3], 5, [0]),
    ],
)
def test_top_rows_are_best_first_with_ties_by_the_lower_row(
    scores: list[float], rows: list[int], k: int, positions: list[int]
) -> None:
    assert top_rows(np.array(scores), _rows(rows), k).tolist() == positions


def test_a_server_ranking_weighs_as_much_as_a_tool_ranking() -> None:
    fused = reciprocal_rank_fusion([_rows([0, 1]), _rows([1, 0])], 2)
    assert fused[0] == pytest.approx(fused[1])
    server_of = _rows([0, 1])
    lifted = fused + reciprocal_rank_fusion([_rows([1, 0])], 2)[server_of]
    assert int(np.argmax(lifted)) == 1


@pytest.mark.parametrize(
    ("query", "steps"),
    [
        ("read a file", []),
        ("find the paper on arxiv and save it to a file", []),
        (
            "find the newest paper on arxiv about protein folding and save its abstract to a file",
            ["find the newest paper on arxiv about protein folding", "save its abstract to a file"],
        ),
        ("get weather, then book a table for two at the Italian place near the office", []),
    ],
)
def test_only_queries_of_twelve_words_with_two_steps_of_three_words_are_split(query: str, steps: list[str]) -> None:
    assert sub_queries(query) == steps


@pytest.mark.parametrize(
    ("query", "normalised"),
    [
        ("save it to /root/notes/cv.md", "save it to file cv md"),
        ("Summarise https://www.youtube.com/watch?v=abc now", "Summarise web page URL youtube now"),
        ("read http://127.0.0.1:8080/x", "read web page URL"),
        ("check www.apple.com/iphone-16/ please", "check web page URL apple please"),
        ("no links here", "no links here"),
    ],
)
def test_urls_keep_their_host_and_paths_their_file_name(query: str, normalised: str) -> None:
    assert normalise_query(query) == normalised
