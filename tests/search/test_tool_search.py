from __future__ import annotations

from pathlib import Path

from mcp_aggregator.search import Embedder, SearchSettings, ToolDoc, ToolSearch, build_tool_search
from mcp_aggregator.search.embedder import NoneEmbedder
from mcp_aggregator.search.onnx_embedder import OnnxMiniLmEmbedder
from mcp_aggregator.search.tool_doc import excerpt

from .conftest import FakeEmbedder

DOCS = [
    ToolDoc("fs.read_file", "fs", "read_file", "Read the contents of a file from disk.", "Filesystem access"),
    ToolDoc("fs.write_file", "fs", "write_file", "Write text to a file on disk.", "Filesystem access"),
    ToolDoc("git.git_log", "git", "git_log", "Show the commit history of a repository.", "Git tools"),
    ToolDoc("a-server.search_tool", "a-server", "search_tool", "Search documents by keyword.", "Docs A"),
    ToolDoc("b-server.search_tool", "b-server", "search_tool", "Search documents by keyword.", "Docs B"),
    ToolDoc("time.get_current_time", "time", "get_current_time", "Current time in a time zone.", "Time"),
]


async def _search(emb: Embedder, **settings: object) -> ToolSearch:
    search = ToolSearch(SearchSettings.model_validate(settings), emb)
    await search.upsert(DOCS)
    return search


async def test_real_model_finds_the_tool_for_a_paraphrased_query(onnx_embedder: OnnxMiniLmEmbedder) -> None:
    search = await _search(onnx_embedder)
    assert search.search("what time is it in Tokyo", 1)[0].key == "time.get_current_time"
    assert search.search("show me the history of commits", 1)[0].key == "git.git_log"


async def test_hits_carry_canonical_name_server_original_name_and_score(fake_embedder: FakeEmbedder) -> None:
    hit = (await _search(fake_embedder)).search("git log", 1)[0]
    assert (hit.key, hit.server, hit.name) == ("git.git_log", "git", "git_log")
    assert hit.description == "Show the commit history of a repository."
    assert hit.score > 0


async def test_same_tool_name_on_two_servers_returns_both(fake_embedder: FakeEmbedder) -> None:
    hits = (await _search(fake_embedder)).search("search tool", 2)
    assert {(h.server, h.name) for h in hits} == {("a-server", "search_tool"), ("b-server", "search_tool")}


async def test_server_filter_keeps_only_that_server(fake_embedder: FakeEmbedder) -> None:
    hits = (await _search(fake_embedder)).search("file", 10, server="git")
    assert {h.server for h in hits} == {"git"}


async def test_allowed_servers_hide_tools_of_other_servers(fake_embedder: FakeEmbedder) -> None:
    search = await _search(fake_embedder)
    hits = search.search("search tool", 10, allowed_servers={"b-server", "git"})
    assert {h.server for h in hits} <= {"b-server", "git"}
    assert "b-server.search_tool" in {h.key for h in hits}
    assert search.search("search tool", 10, allowed_servers=set()) == []
    assert search.search("file", 10, server="fs", allowed_servers={"git"}) == []


async def test_skill_filter_keeps_only_tools_of_that_skill(fake_embedder: FakeEmbedder) -> None:
    search = await _search(fake_embedder)
    search.set_skills("fs.write_file", ["file_management"])
    hits = search.search("file", 10, skill="file_management")
    assert [(h.key, h.skill_ids) for h in hits] == [("fs.write_file", ("file_management",))]


async def test_skills_survive_an_upsert_of_the_same_tool_without_skills(fake_embedder: FakeEmbedder) -> None:
    search = await _search(fake_embedder)
    search.set_skills("fs.write_file", ["file_management"])
    await search.upsert([DOCS[1]])
    assert search.search("file", 10, skill="file_management")[0].key == "fs.write_file"


async def test_removing_a_server_removes_its_tools_from_both_indexes(fake_embedder: FakeEmbedder) -> None:
    search = await _search(fake_embedder)
    removed = search.remove_server("fs")
    assert {d.key for d in removed} == {"fs.read_file", "fs.write_file"}
    assert len(search) == len(DOCS) - 2
    assert all(h.server != "fs" for h in search.search("read write file disk", 10))


async def test_empty_query_or_catalogue_returns_nothing(fake_embedder: FakeEmbedder) -> None:
    assert (await _search(fake_embedder)).search("   ") == []
    assert ToolSearch(SearchSettings(), fake_embedder).search("file") == []


async def test_lexical_only_search_works_without_an_embedder() -> None:
    search = await _search(NoneEmbedder(), embedder="none")
    assert search.search("git_log", 1)[0].key == "git.git_log"


async def test_a_dense_weight_of_zero_ranks_as_bm25_alone(fake_embedder: FakeEmbedder) -> None:
    lexical = await _search(NoneEmbedder(), embedder="none", implicit_needs=[])
    silenced = await _search(fake_embedder, dense_weight=0.0, implicit_needs=[])
    for query in ("search documents", "read a file", "commit history of a repository"):
        assert [h.key for h in silenced.search(query, 6)] == [h.key for h in lexical.search(query, 6)]


async def test_restart_with_the_same_cache_file_embeds_nothing(tmp_path: Path) -> None:
    settings = SearchSettings(cache_path=tmp_path / "cache" / "embeddings.db")
    first_embedder = FakeEmbedder()
    first = ToolSearch(settings, first_embedder)
    assert await first.upsert(DOCS) == len(DOCS)
    first.close()
    second_embedder = FakeEmbedder()
    second = ToolSearch(settings, second_embedder)
    assert await second.upsert(DOCS) == 0
    assert second_embedder.embedded == []
    assert second.search("git log", 1)[0].key == "git.git_log"
    second.close()


async def test_only_changed_descriptions_are_embedded_again(fake_embedder: FakeEmbedder) -> None:
    search = await _search(fake_embedder)
    changed = ToolDoc("git.git_log", "git", "git_log", "Show the log of a git repository.", "Git tools")
    assert await search.upsert([*DOCS[:2], changed]) == 1


async def test_upsert_reports_progress_of_new_embeddings(fake_embedder: FakeEmbedder) -> None:
    seen: list[tuple[int, int]] = []
    search = ToolSearch(SearchSettings(embed_batch_size=4), fake_embedder)
    await search.upsert(DOCS, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(4, 6), (6, 6)]


async def test_build_tool_search_uses_the_qdrant_backend_when_asked(fake_embedder: FakeEmbedder) -> None:
    search = build_tool_search(SearchSettings(vector_backend="qdrant"), fake_embedder)
    await search.upsert(DOCS)
    assert search.search("commit history", 1, allowed_servers={"git"})[0].key == "git.git_log"


def test_excerpt_cuts_long_descriptions_at_a_word_with_an_ellipsis() -> None:
    text = "word " * 100
    cut = excerpt(text)
    assert len(cut) <= 200
    assert cut.endswith("…")
    assert excerpt("  two\nlines ") == "two lines"


async def test_a_smaller_k_returns_a_prefix_of_a_larger_k(fake_embedder: FakeEmbedder) -> None:
    search = await _search(fake_embedder)
    assert search.search("search file time", 2) == search.search("search file time", 6)[:2]


async def test_a_server_whose_description_matches_lifts_its_tools(fake_embedder: FakeEmbedder) -> None:
    search = await _search(fake_embedder)
    await search.upsert([ToolDoc("clock.now", "clock", "now", "Now.", "Zone clock")])
    assert search.search("zone clock", 1)[0].key == "clock.now"


async def test_removing_every_tool_of_a_server_removes_it_from_server_rankings(fake_embedder: FakeEmbedder) -> None:
    search = await _search(fake_embedder)
    search.remove_server("git")
    await search.upsert([DOCS[2]])
    assert search.search("commit history", 1)[0].key == "git.git_log"


async def test_a_repeated_server_filter_sees_tools_added_since_the_last_search(fake_embedder: FakeEmbedder) -> None:
    search = await _search(fake_embedder)
    allowed = {"git", "notes"}
    assert "notes.write_note" not in {h.key for h in search.search("write a note", 10, allowed_servers=allowed)}
    await search.upsert([ToolDoc("notes.write_note", "notes", "write_note", "Write a note.", "Notes")])
    assert search.search("write a note", 1, allowed_servers=allowed)[0].key == "notes.write_note"


PAGE_DOCS = [
    ToolDoc(f"page.{name}", "page", name, f"{what} of a web page.", "Web page tools")
    for name, what in [
        ("page_title", "Get the title"),
        ("page_links", "List the links"),
        ("page_text", "Get the text"),
        ("page_shot", "Take a screenshot"),
    ]
] + [
    ToolDoc("web.fetch", "web", "fetch", "Fetch a web page.", "Web"),
    ToolDoc("legacy.fetch", "legacy", "fetch", "Old HTTP client utilities.", "Legacy"),
    ToolDoc("other.fetch", "other", "fetch", "Retrieve a URL.", "Other"),
]


async def test_other_servers_copies_of_a_top_tool_follow_the_first_five(fake_embedder: FakeEmbedder) -> None:
    search = ToolSearch(SearchSettings(implicit_needs=[]), fake_embedder)
    await search.upsert(PAGE_DOCS)
    hits = search.search("web page", 10)
    assert "web.fetch" in [h.key for h in hits[:5]]
    assert [h.key for h in hits[5:7]] == ["legacy.fetch", "other.fetch"]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    full = [h.key for h in hits]
    assert [[h.key for h in search.search("web page", k)] for k in range(1, 10)] == [full[:k] for k in range(1, 10)]
    filtered = [h.key for h in search.search("web page", 10, allowed_servers={"page", "web", "other"})]
    assert "legacy.fetch" not in filtered
    assert filtered[5] == "other.fetch"


async def test_alternatives_follow_catalogue_changes(fake_embedder: FakeEmbedder) -> None:
    search = ToolSearch(SearchSettings(implicit_needs=[]), fake_embedder)
    await search.upsert(PAGE_DOCS)
    search.remove(["legacy.fetch"])
    await search.upsert([ToolDoc("other.fetch", "other", "get_url", "Retrieve a URL.", "Other")])
    hits = search.search("web page", 10)
    assert "web.fetch" in [h.key for h in hits[:5]]
    assert [h.name for h in hits].count("fetch") == 1


async def test_alternatives_can_be_limited_or_turned_off(fake_embedder: FakeEmbedder) -> None:
    # Unpromoted, the copies rank by their own scores: other.fetch ("Retrieve a URL") first.
    for limit, sixth in ((0, "other.fetch"), (1, "legacy.fetch")):
        search = ToolSearch(SearchSettings(implicit_needs=[], alternatives=limit), fake_embedder)
        await search.upsert(PAGE_DOCS)
        assert search.search("web page", 10)[5].key == sixth
