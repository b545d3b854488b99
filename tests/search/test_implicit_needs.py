from __future__ import annotations

import pytest

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.search import SearchSettings, ToolDoc, ToolSearch
from mcp_aggregator.search.config import ImplicitNeed
from mcp_aggregator.search.implicit_needs import DEFAULT_NEEDS, NeedMatcher
from mcp_aggregator.search.onnx_embedder import OnnxMiniLmEmbedder
from mcp_aggregator.settings import parse_settings

WRITE = "write the content to a file on disk"
TIME = "get the current date and time"
CALC = "calculate a math expression"
FETCH = "fetch a web page URL"
NEWS = "get the latest news and trending topics"


@pytest.mark.parametrize(
    ("query", "needs"),
    [
        ("Generate a deep report of bitcoin and save it in /root/markdown/bitcoin.md", [WRITE]),
        ("Export the table as report.xlsx", [WRITE]),
        ("Summarise /root/pdf/paper.pdf for me", []),
        ("What is a markdown file?", []),
        ("Check the train tickets from Beijing to Shanghai next Wednesday", [TIME]),
        ("How did the index change over the past three days", [TIME]),
        ("Find auspicious wedding dates in the next few months", [TIME]),
        ("Plan something for the near future", [TIME]),
        ("Give me a markdown report in /root/markdown/compare.md", [WRITE]),
        ("Tell me a story about tomorrowland", []),
        ("Estimate the value of 9.5g of gold", [CALC]),
        ("Summarise https://example.com/post for me", [FETCH]),
        ("What's the big news in AI today?", [TIME, NEWS]),
        ("Write today's headlines to /tmp/news.md", [WRITE, TIME, NEWS]),
        ("Who painted the Mona Lisa", []),
    ],
)
def test_default_needs_of_typical_tasks(query: str, needs: list[str]) -> None:
    assert NeedMatcher(DEFAULT_NEEDS).needs_of(query) == needs


def test_custom_needs_replace_the_defaults_and_match_case_insensitively() -> None:
    matcher = NeedMatcher([ImplicitNeed(need="send an email", when=r"\bmail\b", and_when=r"\bto\b")])
    assert matcher.needs_of("MAIL the summary TO Bob") == ["send an email"]
    assert matcher.needs_of("mail it") == []
    assert matcher.needs_of("save it to /tmp/a.md") == []
    assert NeedMatcher([]).needs_of("save it to /tmp/a.md") == []


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ("{implicit_needs: [{need: x y z, when: '(unclosed'}]}", "search.implicit_needs[0].when: not a valid regular"),
        ("{implicit_needs: [{need: x y z, when: a, and_when: '[z-a]'}]}", "implicit_needs[0].and_when: not a valid"),
        ("{implicit_needs: [{need: x, when: a}]}", "search.implicit_needs[0].need: String should have at least 3"),
        ("{implicit_needs: [{when: a}]}", "search.implicit_needs[0].need: Field required"),
        ("{implicit_needs: [{need: x y z, when: ''}]}", "search.implicit_needs[0].when: String should have at least 1"),
        ("{implicit_needs: [{need: x y z, when: a, if: b}]}", "search.implicit_needs[0].if: unknown field"),
        ("{implicit_need_min_similarity: 2}", "search.implicit_need_min_similarity: Input should be less than"),
        ("{alternatives: -1}", "search.alternatives: Input should be greater than or equal to 0"),
        ("{named_servers: perhaps}", "search.named_servers: Input should be a valid boolean"),
        ("{dense_weight: -1}", "search.dense_weight: Input should be greater than or equal to 0"),
    ],
)
def test_bad_search_shaping_settings_are_reported_with_their_path(search: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings(f"servers: []\nsearch: {search}\n")
    assert message in str(info.value)


DOCS = [
    ToolDoc("crypto.get_price", "crypto", "get_price", "Current price and market data of a cryptocurrency.", "Crypto"),
    ToolDoc("crypto.get_history", "crypto", "get_history", "Historical prices of a cryptocurrency.", "Crypto"),
    ToolDoc("crypto.get_news", "crypto", "get_news", "News about a cryptocurrency.", "Crypto"),
    ToolDoc("fs.read_file", "fs", "read_file", "Read the contents of a file from disk.", "Filesystem"),
    ToolDoc("fs.write_file", "fs", "write_file", "Create a new file or overwrite a file with content.", "Filesystem"),
    ToolDoc("git.git_log", "git", "git_log", "Show the commit history of a repository.", "Git"),
]
TASK = "Give me a deep analysis of the bitcoin price and save it in /root/markdown/bitcoin.md"


async def _search(embedder: OnnxMiniLmEmbedder, docs: list[ToolDoc] = DOCS, **settings: object) -> ToolSearch:
    search = ToolSearch(SearchSettings.model_validate(settings), embedder)
    await search.upsert(docs)
    return search


async def test_the_implied_tool_follows_the_best_hit(onnx_embedder: OnnxMiniLmEmbedder) -> None:
    search = await _search(onnx_embedder)
    without = [h.key for h in (await _search(onnx_embedder, implicit_needs=[])).search(TASK, 6)]
    hits = search.search(TASK, 6)
    assert [h.key for h in hits[:2]] == ["crypto.get_price", "fs.write_file"]
    assert without[0] == "crypto.get_price"
    assert without.index("fs.write_file") > 1
    assert sorted(h.key for h in hits) == sorted(without)
    assert hits[1].score == hits[0].score
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_needs_keep_a_smaller_k_a_prefix_of_a_larger_one(onnx_embedder: OnnxMiniLmEmbedder) -> None:
    search = await _search(onnx_embedder)
    full = [h.key for h in search.search(TASK, 6)]
    assert [[h.key for h in search.search(TASK, k)] for k in range(1, 6)] == [full[:k] for k in range(1, 6)]


async def test_no_tool_is_added_when_none_fits_the_need(onnx_embedder: OnnxMiniLmEmbedder) -> None:
    search = await _search(onnx_embedder, [d for d in DOCS if d.server != "fs"])
    plain = await _search(onnx_embedder, [d for d in DOCS if d.server != "fs"], implicit_needs=[])
    assert [h.key for h in search.search(TASK, 5)] == [h.key for h in plain.search(TASK, 5)]


async def test_filters_apply_to_the_implied_tool(onnx_embedder: OnnxMiniLmEmbedder) -> None:
    search = await _search(onnx_embedder)
    assert {h.server for h in search.search(TASK, 5, server="crypto")} == {"crypto"}
    assert {h.server for h in search.search(TASK, 5, allowed_servers={"crypto", "git"})} <= {"crypto", "git"}


async def test_the_implied_tool_follows_catalogue_changes(onnx_embedder: OnnxMiniLmEmbedder) -> None:
    search = await _search(onnx_embedder)
    assert search.search(TASK, 2)[1].key == "fs.write_file"
    search.remove_server("fs")
    assert "fs.write_file" not in {h.key for h in search.search(TASK, 5)}
    await search.upsert([DOCS[4]])
    assert search.search(TASK, 2)[1].key == "fs.write_file"
