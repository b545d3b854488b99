from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mcp_aggregator.search.embedder import Vectors
from mcp_aggregator.search.server_index import ServerIndex

AXES = np.eye(3, dtype=np.float32)
TOOLS = {"fs.read": AXES[0], "fs.write": AXES[0], "git.log": AXES[1], "web.fetch": AXES[2]}


def _vectors_of(keys: Sequence[str]) -> Vectors:
    return np.stack([TOOLS[k] for k in keys])


def _index() -> ServerIndex:
    index = ServerIndex(3)
    index.upsert(list(TOOLS), [k.split(".")[0] for k in TOOLS])
    index.set_description("fs", AXES[2])
    index.set_description("git", AXES[1])
    index.set_description("web", AXES[0])
    return index


def test_servers_rank_by_tool_centroid_and_by_description_separately() -> None:
    by_centroid, by_description = _index().rankings(AXES[[0]], None, _vectors_of)
    assert by_centroid[0] == "fs"
    assert by_description[0] == "web"


def test_a_step_of_the_query_can_lift_a_server() -> None:
    query = np.stack([AXES[0], AXES[1]])
    by_centroid, _ = _index().rankings(query, None, _vectors_of)
    assert by_centroid == ["fs", "git", "web"]  # fs (whole query) and git (a step) tie


def test_allowed_servers_restrict_both_rankings() -> None:
    by_centroid, by_description = _index().rankings(AXES[[0]], {"git", "web"}, _vectors_of)
    assert sorted(by_centroid) == ["git", "web"]
    assert by_description == ["web", "git"]


def test_a_server_without_tools_is_dropped_and_its_description_forgotten() -> None:
    index = _index()
    index.remove(["git.log"], ["git"])
    assert index.rankings(AXES[[1]], None, _vectors_of)[0] == ["fs", "web"]
    assert not index.has_description("git")
    assert len(index) == 2


def test_changed_tool_vectors_move_the_centroid_after_an_upsert() -> None:
    tools = dict(TOOLS)
    index = _index()
    assert index.rankings(AXES[[2]], None, lambda keys: np.stack([tools[k] for k in keys]))[0][0] == "web"
    tools["fs.read"] = tools["fs.write"] = AXES[2] * 2
    index.upsert(["fs.read", "fs.write"], ["fs", "fs"])
    by_centroid, _ = index.rankings(AXES[[2]], None, lambda keys: np.stack([tools[k] for k in keys]))
    assert by_centroid == ["fs", "web", "git"]
