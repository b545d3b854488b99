"""``UseViews``: past queries rank their tools only when close to the new query."""

from __future__ import annotations

import numpy as np

from mcp_aggregator.search.tool_table import ToolTable
from mcp_aggregator.search.use_views import MAX_VIEWS_PER_TOOL, MIN_VIEW_SIMILARITY, UseViews


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


TABLE = ToolTable([("a.x", "a"), ("a.y", "a"), ("b.z", "b")])


def test_tools_rank_by_their_closest_view_and_views_below_the_threshold_do_not_count() -> None:
    views = UseViews(2)
    views.add("a.x", "read a file", unit(1, 0))
    views.add("b.z", "open a document", unit(1, 0.3))
    views.add("a.y", "unrelated", unit(0, 1))
    ranked = views.ranking(unit(1, 0.05), TABLE, lambda key: True)
    assert [TABLE.keys[r] for r in ranked] == ["a.x", "b.z"]
    assert float(unit(0, 1) @ unit(1, 0.05)) < MIN_VIEW_SIMILARITY


def test_views_of_tools_not_allowed_or_not_in_the_catalogue_are_skipped() -> None:
    views = UseViews(2)
    views.add("a.x", "read a file", unit(1, 0))
    views.add("gone.tool", "read a file", unit(1, 0))
    views.add("b.z", "read a file", unit(1, 0))
    ranked = views.ranking(unit(1, 0), TABLE, lambda key: not key.startswith("b."))
    assert [TABLE.keys[r] for r in ranked] == ["a.x"]


def test_a_tool_keeps_its_latest_views_and_a_repeated_query_once() -> None:
    views = UseViews(2)
    for i in range(MAX_VIEWS_PER_TOOL + 3):
        views.add("a.x", f"query {i}", unit(1, i))
    views.add("a.x", f"query {MAX_VIEWS_PER_TOOL + 2}", unit(1, 0))
    queries = views.queries("a.x")
    assert len(queries) == len(views) == MAX_VIEWS_PER_TOOL
    assert queries[0] == "query 3" and queries[-1] == f"query {MAX_VIEWS_PER_TOOL + 2}"
    views.clear()
    assert len(views) == 0 and len(views.ranking(unit(1, 0), TABLE, lambda key: True)) == 0
