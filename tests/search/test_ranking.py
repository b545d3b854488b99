from __future__ import annotations

import numpy as np
import pytest

from mcp_aggregator.search.ranking import (
    add_server_scores,
    reciprocal_rank_fusion,
    servers_by_best_tool,
    step_scores,
    sub_queries,
)


def _server(key: str) -> str:
    return key.split(".", 1)[0]


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
    ("scores", "servers"),
    [
        ({}, []),
        ({"a.x": 0.1, "b.y": 0.3, "a.z": 0.5}, ["a", "b"]),
        ({"b.x": 0.2, "a.x": 0.2}, ["a", "b"]),
        ({"c.x": 0.1, "b.x": 0.4, "b.y": 0.9, "a.x": 0.5}, ["b", "a", "c"]),
    ],
)
def test_servers_rank_by_their_best_tool_with_ties_by_name(scores: dict[str, float], servers: list[str]) -> None:
    assert servers_by_best_tool(scores, _server) == servers


@pytest.mark.parametrize(
    ("scores", "server_scores", "expected"),
    [
        ({"a.x": 1.0, "b.y": 2.0}, {"a": 0.5}, {"a.x": 1.5, "b.y": 2.0}),
        ({"a.x": 1.0, "a.y": 0.0}, {"a": 1.0, "c": 9.0}, {"a.x": 2.0, "a.y": 1.0}),
        ({}, {"a": 1.0}, {}),
    ],
)
def test_each_tool_gets_its_servers_score(
    scores: dict[str, float], server_scores: dict[str, float], expected: dict[str, float]
) -> None:
    assert add_server_scores(scores, server_scores, _server) == pytest.approx(expected)


def test_a_server_ranking_weighs_as_much_as_a_tool_ranking() -> None:
    fused = reciprocal_rank_fusion([["a.x", "b.y"], ["b.y", "a.x"]])
    assert fused["a.x"] == pytest.approx(fused["b.y"])
    lifted = add_server_scores(fused, reciprocal_rank_fusion([["b", "a"]]), _server)
    assert max(lifted, key=lifted.__getitem__) == "b.y"


@pytest.mark.parametrize(
    ("query", "steps"),
    [
        ("read a file", []),
        ("find the paper on arxiv and save it to a file", ["find the paper on arxiv", "save it to a file"]),
        ("get weather, then book a table for two", []),
    ],
)
def test_only_queries_with_two_steps_of_three_words_are_split(query: str, steps: list[str]) -> None:
    assert sub_queries(query) == steps
