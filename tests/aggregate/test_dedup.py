import random
from datetime import UTC, datetime
from fractions import Fraction
from itertools import pairwise

import pytest
from rapidfuzz.distance import Levenshtein

from mcp_aggregator.aggregate.dedup import deduplicate, is_near_duplicate, normalise
from mcp_aggregator.aggregate.ranking import ScoreBreakdown, ScoredResult
from mcp_aggregator.aggregate.result_extraction import RawResult

NOW = datetime(2026, 11, 21, tzinfo=UTC)
ZERO = ScoreBreakdown(0.0, 0.0, 0.0, 0.0)


def ranked(*contents: str) -> list[ScoredResult]:
    """Results already in rank order (best first)."""
    return [
        ScoredResult(
            raw=RawResult(server="s", content=c, retrieved_at=NOW, source_time=None, original_length=len(c)),
            score=1.0 - i / 1000,
            breakdown=ZERO,
        )
        for i, c in enumerate(contents)
    ]


def kept(outcome_items: list[ScoredResult]) -> list[str]:
    return [item.raw.content for item in outcome_items]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("  React   Hooks\n\tguide. ", "react hooks guide"),
        ("...Hello, world!!!", "hello, world"),
        ("«quoted»", "quoted"),
        ("", ""),
    ],
)
def test_normalise_lowercases_collapses_whitespace_and_trims_punctuation(content: str, expected: str) -> None:
    assert normalise(content) == expected


def test_exact_duplicates_after_normalisation_keep_the_highest_ranked() -> None:
    outcome = deduplicate(ranked("React hooks.", "react   HOOKS", "Vue"), threshold=0.8, limit=30)
    assert kept(outcome.kept) == ["React hooks.", "Vue"]
    assert outcome.duplicates == 1


def test_near_duplicates_above_threshold_are_dropped() -> None:
    a = "useState returns a stateful value and a function to update it"
    b = "useState returns a stateful value and a function to update it!!"
    c = "useState return a stateful value, and a function to updates it"
    outcome = deduplicate(ranked(a, b, c, "Completely different text about Vue"), threshold=0.8, limit=30)
    assert kept(outcome.kept) == [a, "Completely different text about Vue"]
    assert outcome.duplicates == 2


def test_similarity_exactly_at_threshold_is_not_a_duplicate() -> None:
    assert Levenshtein.normalized_similarity("abcde", "abcdx") == 0.8
    assert kept(deduplicate(ranked("abcde", "abcdx"), threshold=0.8, limit=30).kept) == ["abcde", "abcdx"]
    assert kept(deduplicate(ranked("abcde", "abcdx"), threshold=0.79, limit=30).kept) == ["abcde"]


def test_threshold_one_removes_only_exact_duplicates() -> None:
    outcome = deduplicate(ranked("abcdef", "abcdeg", "ABCDEF"), threshold=1.0, limit=30)
    assert kept(outcome.kept) == ["abcdef", "abcdeg"]


def test_threshold_zero_keeps_only_wholly_different_results() -> None:
    outcome = deduplicate(ranked("abc", "abd", "xyz"), threshold=0.0, limit=30)
    assert kept(outcome.kept) == ["abc", "xyz"]


def test_single_result_and_all_identical_results() -> None:
    assert kept(deduplicate(ranked("only"), threshold=0.8, limit=10).kept) == ["only"]
    outcome = deduplicate(ranked(*["same"] * 50), threshold=0.8, limit=10)
    assert (kept(outcome.kept), outcome.duplicates) == (["same"], 49)


def test_no_more_than_limit_results_are_kept_and_exact_duplicates_after_it_still_count() -> None:
    contents = [f"distinct result number {i} " + "x" * i for i in range(40)]
    outcome = deduplicate(ranked(*contents, contents[0], contents[35]), threshold=0.95, limit=10)
    assert kept(outcome.kept) == contents[:10]
    assert outcome.duplicates == 2


def test_length_ratio_bound_skips_pairs_that_cannot_be_similar() -> None:
    assert not is_near_duplicate("a" * 10, ["a" * 100], 0.8)
    assert is_near_duplicate("a" * 95, ["a" * 100], 0.8)


def test_dedup_matches_brute_force_pairwise_definition_when_all_fit() -> None:
    base = [f"result {i}: hooks manage state in component number {i * 7}" for i in range(30)]
    noisy = [text.replace("manage", "manages") for text in base[::3]]
    items = ranked(*base, *noisy, *base[:5])
    outcome = deduplicate(items, threshold=0.9, limit=100)

    expected: list[str] = []
    for item in items:
        norm = normalise(item.raw.content)
        if all(norm != normalise(k) and Levenshtein.normalized_similarity(norm, normalise(k)) <= 0.9 for k in expected):
            expected.append(item.raw.content)
    assert kept(outcome.kept) == expected
    assert outcome.duplicates == len(items) - len(expected)
    assert all(a.score >= b.score for a, b in pairwise(outcome.kept))


def exactly_more_similar(a: str, b: str, threshold: float) -> bool:
    """similarity > threshold in exact arithmetic (floats make 1 - 7/10 > 0.3 true)."""
    longer = max(len(a), len(b))
    if longer == 0:
        return False
    return Fraction(longer - Levenshtein.distance(a, b), longer) > Fraction(str(threshold))


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 0.99, 1.0])
def test_length_window_finds_exactly_what_comparing_every_pair_finds(threshold: float) -> None:
    rng = random.Random(int(threshold * 100))
    alphabet = "aab c"
    texts = ["".join(rng.choices(alphabet, k=rng.randint(0, 12))) for _ in range(40)]
    for index, candidate in enumerate(texts):
        kept = texts[:index]
        expected = any(exactly_more_similar(candidate, other, threshold) for other in kept)
        assert is_near_duplicate(candidate, kept, threshold) == expected, (candidate, kept)
