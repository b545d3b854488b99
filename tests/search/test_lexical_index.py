from __future__ import annotations

import pytest

from mcp_aggregator.search.lexical_index import LexicalIndex
from mcp_aggregator.search.row_table import IndexFilter
from mcp_aggregator.text import search_terms as tokenize
from mcp_aggregator.text import split_identifier


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("get_current_stock_price", ["get", "current", "stock", "price"]),
        ("get-weibo-trending", ["get", "weibo", "trending"]),
        ("readFile", ["read", "file"]),
        ("getHTTPResponse", ["get", "http", "response"]),
        ("api.v2.create", ["api", "v2", "create"]),
        ("git.git_log", ["git", "git", "log"]),
        ("XMLToJSON", ["xml", "to", "json"]),
        ("search", ["search"]),
    ],
)
def test_tool_names_split_into_lowercase_words(name: str, words: list[str]) -> None:
    assert split_identifier(name) == words


def test_tokenize_drops_stop_words_and_folds_plurals() -> None:
    assert tokenize("Get the prices of files") == ["get", "price", "file"]


def test_han_characters_become_one_term_each() -> None:
    assert tokenize("必应搜索 bing") == ["必", "应", "搜", "索", "bing"]


def _index() -> LexicalIndex:
    index = LexicalIndex()
    index.upsert("fs.read_file", "fs", tokenize("read_file Read a file from disk filesystem"))
    index.upsert("fs.write_file", "fs", tokenize("write_file Write a file to disk filesystem"), ["files"])
    index.upsert("git.git_log", "git", tokenize("git_log Show the commit log git"))
    return index


def test_bm25_ranks_the_tool_whose_name_matches_first() -> None:
    assert _index().search("readFile", 3)[0][0] == "fs.read_file"


def test_bm25_finds_tools_through_their_server_words() -> None:
    keys = [k for k, _ in _index().search("git commits", 3)]
    assert keys == ["git.git_log"]


def test_bm25_filters_by_server_and_skill() -> None:
    index = _index()
    assert {k for k, _ in index.search("file log", 5, IndexFilter.of(servers={"git"}))} == {"git.git_log"}
    assert [k for k, _ in index.search("file", 5, IndexFilter(skill="files"))] == ["fs.write_file"]


def test_removed_and_replaced_documents_are_no_longer_found() -> None:
    index = _index()
    index.remove("fs.read_file")
    index.upsert("git.git_log", "git", tokenize("git_log history"))
    assert [k for k, _ in index.search("read", 5)] == []
    assert [k for k, _ in index.search("history", 5)] == ["git.git_log"]
    assert len(index) == 2


def test_sole_server_of_a_term_follows_removals() -> None:
    index = LexicalIndex()
    index.upsert("wiki.get", "wiki", tokenize("get a wikipedia article"))
    index.upsert("wiki.search", "wiki", tokenize("search wikipedia"))
    index.upsert("web.fetch", "web", tokenize("fetch a page, even from wikipedia"))
    (wikipedia,) = tokenize("wikipedia")
    (article,) = tokenize("article")
    assert index.sole_server_with(wikipedia) is None
    assert index.sole_server_with(article) == "wiki"
    assert index.sole_server_with("nowhere") is None
    index.remove("web.fetch")
    assert index.sole_server_with(wikipedia) == "wiki"
