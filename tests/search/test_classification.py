from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from mcp_aggregator.errors import ConfigError, SearchError
from mcp_aggregator.search import SearchSettings, SkillSpec, ToolDoc, ToolSearch
from mcp_aggregator.search.build import build_classifier, build_skill_index
from mcp_aggregator.search.classification_queue import ClassificationQueue, ClassificationState
from mcp_aggregator.search.classifier import (
    EmbeddingClassifier,
    LlmClassifier,
    SkillAssignment,
    parse_answer,
    select,
)
from mcp_aggregator.search.onnx_embedder import OnnxMiniLmEmbedder
from mcp_aggregator.search.skills import SkillIndex, load_skills

from .conftest import FakeEmbedder, Handler, JsonServer

SKILLS = [
    SkillSpec(id="files", name="Files", description="read write files on disk"),
    SkillSpec(id="vcs", name="Version control", description="git commits branches"),
    SkillSpec(id="time", name="Time", description="clock time zones dates"),
]
DOCS = [
    ToolDoc("fs.read_file", "fs", "read_file", "Read a file from disk."),
    ToolDoc("fs.write_file", "fs", "write_file", "Write a file to disk."),
    ToolDoc("git.git_log", "git", "git_log", "Show git commits."),
]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FlakyClassifier:
    """Fails while ``down`` is set, then assigns by a fixed table."""

    def __init__(self, table: dict[str, list[SkillAssignment]]) -> None:
        self.table = table
        self.down = False
        self.calls = 0

    async def classify(self, doc: ToolDoc) -> list[SkillAssignment]:
        self.calls += 1
        if self.down:
            raise SearchError("LLM unavailable")
        return self.table[doc.key]


TABLE = {
    "fs.read_file": [SkillAssignment("files", 0.9), SkillAssignment("vcs", 0.2)],
    "fs.write_file": [SkillAssignment("files", 0.8), SkillAssignment("time", 0.6)],
    "git.git_log": [SkillAssignment("vcs", 0.95)],
}


async def _search(embedder: FakeEmbedder) -> ToolSearch:
    search = ToolSearch(SearchSettings(), embedder)
    await search.upsert(DOCS)
    return search


def test_select_keeps_at_most_three_confident_skills_highest_first() -> None:
    picked = select(
        [SkillAssignment(s, c) for s, c in [("a", 0.4), ("b", 0.9), ("c", 0.6), ("d", 0.7), ("e", 0.55)]], 0.5
    )
    assert [a.skill_id for a in picked] == ["b", "d", "c"]


def test_the_default_skill_set_has_about_fifteen_distinct_skills() -> None:
    skills = load_skills()
    assert 12 <= len(skills) <= 20
    assert len({s.id for s in skills}) == len(skills)


def test_llm_answers_wrapped_in_prose_are_parsed_and_unknown_skills_dropped() -> None:
    text = 'Sure: {"skills": [{"id": "files", "confidence": 0.9}, {"id": "nope", "confidence": 1}]}'
    assert parse_answer(text, SKILLS) == [SkillAssignment("files", 0.9)]
    with pytest.raises(SearchError):
        parse_answer("no json here", SKILLS)


def _answer(skills: list[dict[str, Any]]) -> str:
    return json.dumps({"skills": skills})


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_llm_classifier_talks_to_a_local_fake_llm(api: str, json_server: Callable[[Handler], JsonServer]) -> None:
    text = _answer([{"id": "vcs", "confidence": 0.8}])

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if path == "/v1/messages":
            return 200, {"content": [{"type": "text", "text": text}]}
        return 200, {"choices": [{"message": {"role": "assistant", "content": text}}]}

    server = json_server(reply)
    classifier = LlmClassifier(api, server.url, "model-x", SKILLS, api_key="k")  # type: ignore[arg-type]
    assert await classifier.classify(DOCS[2]) == [SkillAssignment("vcs", 0.8)]
    await classifier.aclose()
    path, body, headers = server.requests[0]
    assert path == ("/v1/messages" if api == "anthropic" else "/chat/completions")
    assert body["model"] == "model-x"
    assert "git_log" in body["messages"][0]["content"]
    assert headers.get("x-api-key" if api == "anthropic" else "Authorization") in ("k", "Bearer k")


async def test_an_llm_outage_is_a_search_error(json_server: Callable[[Handler], JsonServer]) -> None:
    server = json_server(lambda path, body: (503, {"error": "overloaded"}))
    classifier = LlmClassifier("anthropic", server.url, "m", SKILLS)
    with pytest.raises(SearchError, match="failed"):
        await classifier.classify(DOCS[0])
    await classifier.aclose()


async def test_embedding_classifier_gives_a_clear_match_at_least_half_confidence(
    onnx_embedder: OnnxMiniLmEmbedder,
) -> None:
    skills = load_skills()
    search = ToolSearch(SearchSettings(), onnx_embedder)
    index = SkillIndex(skills, search)
    classifier = EmbeddingClassifier(onnx_embedder, skills, index.description_vectors())
    doc = ToolDoc("time.convert_time", "time", "convert_time", "Convert a time between time zones.")
    top = (await classifier.classify(doc))[0]
    assert top.skill_id == "calendar_time"
    assert top.confidence >= 0.5


async def test_queue_classifies_tools_and_sets_their_skills(fake_embedder: FakeEmbedder) -> None:
    search = await _search(fake_embedder)
    queue = ClassificationQueue(FlakyClassifier(TABLE), search, clock=FakeClock())
    queue.submit(search_keys := [d.key for d in DOCS])
    assert await queue.process_due() == 3
    assert all(queue.is_classified(k) for k in search_keys)
    assert [a.skill_id for a in queue.assignments("fs.write_file")] == ["files", "time"]
    assert search.search("file", 5, skill="time")[0].key == "fs.write_file"


async def test_failed_classification_leaves_tool_searchable_and_is_retried_later(
    fake_embedder: FakeEmbedder,
) -> None:
    search = await _search(fake_embedder)
    clock = FakeClock()
    classifier = FlakyClassifier(TABLE)
    classifier.down = True
    queue = ClassificationQueue(classifier, search, clock=clock)
    queue.submit(["git.git_log"])
    await queue.process_due()
    assert queue.state("git.git_log") is ClassificationState.UNCLASSIFIED
    assert search.search("git commits", 1)[0].key == "git.git_log"
    classifier.down = False
    assert await queue.process_due() == 0  # not due before the retry delay
    clock.now += 30.0
    assert await queue.process_due() == 1
    assert queue.is_classified("git.git_log")


async def test_a_tool_with_no_confident_skill_is_classified_into_none(fake_embedder: FakeEmbedder) -> None:
    search = await _search(fake_embedder)
    queue = ClassificationQueue(FlakyClassifier({"git.git_log": [SkillAssignment("vcs", 0.3)]}), search)
    queue.submit(["git.git_log"])
    await queue.process_due()
    assert queue.is_classified("git.git_log"), "an answer, not a failure to retry"
    assert queue.assignments("git.git_log") == ()
    assert queue.next_due() is None
    doc = search.get("git.git_log")
    assert doc is not None and doc.skill_ids == ()


async def test_tools_that_fit_no_skill_are_listed_at_debug_and_summed_up_in_one_info_line(
    fake_embedder: FakeEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_aggregator.search.classification_queue")
    search = await _search(fake_embedder)
    weak = [SkillAssignment("vcs", 0.3)]
    queue = ClassificationQueue(FlakyClassifier({d.key: weak for d in DOCS}), search)
    queue.submit([d.key for d in DOCS])
    await queue.process_due()
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert info == ["classified 3 tools: 3 fit no skill above confidence 0.50"]
    assert sorted(debug) == sorted(f"{d.key} fits no skill above confidence 0.50" for d in DOCS)


async def test_background_loop_classifies_with_bounded_concurrency(fake_embedder: FakeEmbedder) -> None:
    search = ToolSearch(SearchSettings(), fake_embedder)
    docs = [ToolDoc(f"s.t{i}", "s", f"t{i}", f"tool number {i}") for i in range(50)]
    await search.upsert(docs)
    in_flight = 0
    peak = 0

    class Slow:
        async def classify(self, doc: ToolDoc) -> list[SkillAssignment]:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await anyio.lowlevel.checkpoint()
            in_flight -= 1
            return [SkillAssignment("files", 0.9)]

    queue = ClassificationQueue(Slow(), search, concurrency=5)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(queue.run)
            queue.submit([d.key for d in docs])
            await queue.wait_settled()
            tg.cancel_scope.cancel()
    assert queue.counts()["classified"] == 50
    assert 1 < peak <= 5


async def test_retry_now_retries_failures_at_once_when_the_llm_is_back(fake_embedder: FakeEmbedder) -> None:
    search = await _search(fake_embedder)
    classifier = FlakyClassifier(TABLE)
    classifier.down = True
    queue = ClassificationQueue(classifier, search, clock=FakeClock())
    queue.submit(["fs.read_file"])
    await queue.process_due()
    classifier.down = False
    queue.retry_now()
    assert await queue.process_due() == 1
    assert queue.is_classified("fs.read_file")


async def test_skill_vector_is_its_tools_centroid_and_falls_back_to_its_description(
    fake_embedder: FakeEmbedder,
) -> None:
    search = await _search(fake_embedder)
    index = SkillIndex(SKILLS, search)
    described = index.description_vectors()
    search.set_skills("git.git_log", ["vcs"])
    vectors = index.refresh()
    assert index.tool_counts == {"files": 0, "vcs": 1, "time": 0}
    assert vectors[1] == pytest.approx(search.tool_vectors(["git.git_log"])[0], abs=1e-6)
    assert vectors[0] == pytest.approx(described[0], abs=1e-6)
    search.remove_server("git")
    assert index.refresh()[1] == pytest.approx(described[1], abs=1e-6)
    assert index.tool_counts["vcs"] == 0


async def test_build_classifier_defaults_to_embeddings_and_needs_a_url_for_an_llm(
    fake_embedder: FakeEmbedder,
) -> None:
    search = await _search(fake_embedder)
    skills = build_skill_index(SearchSettings(skills=SKILLS), search)
    assert isinstance(build_classifier(SearchSettings(), skills), EmbeddingClassifier)
    with pytest.raises(ConfigError, match="llm_base_url"):
        build_classifier(SearchSettings(classifier="anthropic"), skills)
    llm = build_classifier(SearchSettings(classifier="openai", llm_base_url="http://127.0.0.1:9"), skills)
    assert isinstance(llm, LlmClassifier)
    await llm.aclose()
