from __future__ import annotations

import numpy as np

from mcp_aggregator.search.tool_table import ToolTable

TOOLS = [("web.fetch", "web"), ("fs.write", "fs"), ("fs.read", "fs"), ("git.log", "git")]


def test_rows_follow_key_order_and_server_codes_follow_name_order() -> None:
    table = ToolTable(TOOLS)
    assert table.keys == ["fs.read", "fs.write", "git.log", "web.fetch"]
    assert table.servers == ["fs", "git", "web"]
    assert table.server_of.tolist() == [0, 0, 1, 2]


def test_rows_of_unknown_keys_are_skipped() -> None:
    assert ToolTable(TOOLS).rows(["web.fetch", "gone.tool", "fs.read"]).tolist() == [3, 0]


def test_server_scores_are_realigned_from_another_index_order() -> None:
    table = ToolTable(TOOLS)
    names = ["web", "old", "fs"]
    assert table.server_scores(names, np.array([0.3, 0.9, 0.1])).tolist() == [0.1, 0.0, 0.3]
    assert table.server_scores(["git"], np.array([0.5])).tolist() == [0.0, 0.5, 0.0]
