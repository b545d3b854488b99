from __future__ import annotations

import pytest

from mcp_aggregator.search import SearchSettings, ToolDoc, ToolSearch
from mcp_aggregator.search.server_names import ServerNames, mention_terms, name_words
from mcp_aggregator.text import search_terms

from .conftest import FakeEmbedder


def test_name_words_drop_generic_and_short_words() -> None:
    assert name_words("wikipedia-mcp-server") == {"wikipedia"}
    assert name_words("op-gg-mcp-server") == set()
    assert name_words("mcp-yahoo-finance") == set(search_terms("yahoo finance"))


def test_paths_name_nothing_but_url_hosts_do() -> None:
    terms = mention_terms("List /root/music/a.wav and summarise https://www.youtube.com/watch?v=1")
    assert not set(search_terms("music")) & terms
    assert set(search_terms("youtube")) <= terms


SERVERS_WITH = {
    search_terms("wikipedia")[0]: {"wikipedia-mcp-server"},
    search_terms("yahoo")[0]: {"mcp-yahoo-finance"},
    search_terms("finance")[0]: {"mcp-yahoo-finance", "investor-agent"},
}


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("An overview of CNNs, referencing Wikipedia", ["wikipedia-mcp-server"]),
        ("Yahoo quotes for NVDA", ["mcp-yahoo-finance"]),
        ("Personal finance tips", []),  # "finance" also occurs in another server's tools
        ("Read /root/wikipedia/notes.md", []),
        ("Nothing named here", []),
    ],
)
def test_a_word_names_a_server_only_when_no_other_server_uses_it(query: str, named: list[str]) -> None:
    def sole_server_with(term: str) -> str | None:
        servers = SERVERS_WITH.get(term, set())
        return next(iter(servers)) if len(servers) == 1 else None

    names = ServerNames(["wikipedia-mcp-server", "mcp-yahoo-finance", "investor-agent"], sole_server_with)
    assert names.named_in(query) == named


DOCS = [
    ToolDoc("arxiv.search_papers", "arxiv", "search_papers", "Search papers about neural networks.", "Papers"),
    ToolDoc("arxiv.get_paper", "arxiv", "get_paper", "Download a paper about networks.", "Papers"),
    ToolDoc("arxiv.list_networks", "arxiv", "list_networks", "List neural network papers.", "Papers"),
    ToolDoc("scholar.find", "scholar", "find", "Find neural network research.", "Research"),
    ToolDoc("scholar.cite", "scholar", "cite", "Cite neural network research.", "Research"),
    ToolDoc("blog.posts", "blog", "posts", "Posts about neural networks.", "Blogs"),
    ToolDoc("wikipedia.get_article", "wikipedia", "get_article", "Get an encyclopedia article.", "Encyclopedia"),
]
TASK = "explain convolutional neural networks, referencing wikipedia"


async def test_the_named_servers_best_tool_joins_the_head(fake_embedder: FakeEmbedder) -> None:
    search = ToolSearch(SearchSettings(implicit_needs=[]), fake_embedder)
    await search.upsert(DOCS)
    keys = [h.key for h in search.search(TASK, 7)]
    assert keys[1] == "wikipedia.get_article"
    assert [[h.key for h in search.search(TASK, k)] for k in range(1, 7)] == [keys[:k] for k in range(1, 7)]
    assert "wikipedia.get_article" not in [h.key for h in search.search(TASK, 5, server="arxiv")]
    search.remove_server("wikipedia")
    assert all(h.server != "wikipedia" for h in search.search(TASK, 7))


async def test_named_servers_can_be_turned_off(fake_embedder: FakeEmbedder) -> None:
    search = ToolSearch(SearchSettings(implicit_needs=[], named_servers=False), fake_embedder)
    await search.upsert(DOCS)
    assert [h.key for h in search.search(TASK, 7)][1] != "wikipedia.get_article"
