import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from mcp_aggregator.aggregate import AggregatorSettings, RankingWeights, ScoreBreakdown, ServerQuerySettings
from mcp_aggregator.aggregate.keyword_matcher import query_terms
from mcp_aggregator.aggregate.ranking import (
    combine,
    freshness,
    keyword_match,
    length_penalty,
    rank_results,
)
from mcp_aggregator.aggregate.result_extraction import RawResult

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
DAY = 86_400.0


def raw(
    content: str, server: str = "s", *, source_time: datetime | None = None, length: int | None = None
) -> RawResult:
    return RawResult(
        server=server,
        content=content,
        retrieved_at=NOW,
        source_time=source_time,
        original_length=len(content) if length is None else length,
    )


@pytest.mark.parametrize(
    ("query", "content", "expected"),
    [
        ("react hooks", "React hooks are functions", 1 / 1.1),
        ("react hooks", "React", 0.5 / 1.1),
        ("react hooks", "Vue", 0.0),
        ("react hooks", "react react hooks hooks", 2 / 2.1),
        ("managing state", "State management in React", 1 / 1.1),
        ("the", "the end", 1 / 1.1),
        ("?!", "anything", 0.0),
    ],
)
def test_keyword_match_is_the_saturating_share_of_query_stems_found(query: str, content: str, expected: float) -> None:
    assert keyword_match(query_terms(query), content) == pytest.approx(expected)


def test_keyword_match_saturates_towards_one_but_never_passes_it() -> None:
    assert keyword_match(("hook",), "hook " * 10_000) == pytest.approx(1.0, abs=1e-4)
    assert keyword_match(("hook",), "hook " * 10_000) <= 1.0


@pytest.mark.parametrize(
    ("age_days", "expected"),
    [(0, 1.0), (-5, 1.0), (30, 0.5), (60, 0.25), (1e9, 0.0)],
)
def test_freshness_halves_every_half_life(age_days: float, expected: float) -> None:
    when = NOW - timedelta(days=age_days) if age_days < 1e6 else datetime(1, 1, 1, tzinfo=UTC)
    assert freshness(when, now=NOW, half_life_secs=30 * DAY) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("length", "expected"),
    [(0, 1.0), (2000, 1.0), (4000, 0.5), (200_000, 0.01)],
)
def test_length_penalty_starts_past_the_configured_length(length: int, expected: float) -> None:
    assert length_penalty(length, start_chars=2000) == pytest.approx(expected)


def test_score_is_the_weighted_sum_of_the_breakdown() -> None:
    breakdown = ScoreBreakdown(keyword_match=1.0, freshness=0.5, server_reputation=0.25, length_penalty=0.0)
    weights = RankingWeights().normalised()
    assert combine(breakdown, weights) == pytest.approx(0.4 + 0.15 + 0.05, abs=1e-4)


def test_score_is_clamped_and_never_nan() -> None:
    nan = ScoreBreakdown(keyword_match=math.nan, freshness=2.0, server_reputation=-1.0, length_penalty=1.0)
    assert combine(nan, (0.25, 0.25, 0.25, 0.25)) == 0.5


def test_ranking_uses_reputation_from_settings_and_default_otherwise() -> None:
    settings = AggregatorSettings(
        ranking_weights=RankingWeights(keyword_match=0, freshness=0, server_reputation=1, length_penalty=0),
        servers={"trusted": ServerQuerySettings(reputation=0.9)},
        default_reputation=0.3,
    )
    ranked = rank_results([raw("a", "other"), raw("b", "trusted")], query="q", settings=settings, now=NOW)
    assert [(r.raw.server, r.score) for r in ranked] == [("trusted", 0.9), ("other", 0.3)]


def test_source_timestamp_feeds_freshness_and_retrieval_time_otherwise() -> None:
    settings = AggregatorSettings(
        ranking_weights=RankingWeights(keyword_match=0, freshness=1, server_reputation=0, length_penalty=0)
    )
    old = raw("old", source_time=NOW - timedelta(days=30))
    ranked = rank_results([old, raw("undated")], query="q", settings=settings, now=NOW)
    assert [(r.raw.content, r.breakdown.freshness) for r in ranked] == [("undated", 1.0), ("old", 0.5)]


def test_very_long_results_lose_against_equal_short_ones() -> None:
    settings = AggregatorSettings()
    long = raw("react hooks", length=100_000)
    ranked = rank_results([long, raw("react hooks!")], query="react hooks", settings=settings, now=NOW)
    assert ranked[0].raw.content == "react hooks!"
    assert ranked[1].breakdown.length_penalty == pytest.approx(0.02)


def test_ties_break_by_server_name_then_content() -> None:
    settings = AggregatorSettings()
    results = [raw("beta", "b"), raw("alpha", "b"), raw("gamma", "a")]
    ranked = rank_results(results, query="zzz", settings=settings, now=NOW)
    assert len({r.score for r in ranked}) == 1
    assert [r.raw.content for r in ranked] == ["gamma", "alpha", "beta"]


def test_identical_results_keep_their_arrival_order() -> None:
    first, second = raw("same", "a"), raw("same", "a", source_time=NOW)
    ranked = rank_results([first, second], query="q", settings=AggregatorSettings(), now=NOW)
    assert [r.raw for r in ranked] == [first, second]


def test_same_results_in_any_arrival_order_rank_identically() -> None:
    rng = random.Random(7)
    words = ["react", "hooks", "state", "vue", "signal", "store", "redux", "context"]
    results = [
        raw(" ".join(rng.choices(words, k=rng.randint(1, 12))), f"server{rng.randint(0, 4)}") for _ in range(200)
    ]
    settings = AggregatorSettings()
    first = rank_results(results, query="react state hooks", settings=settings, now=NOW)
    shuffled = results[:]
    rng.shuffle(shuffled)
    second = rank_results(shuffled, query="react state hooks", settings=settings, now=NOW)
    assert [(r.raw.server, r.raw.content, r.score) for r in first] == [
        (r.raw.server, r.raw.content, r.score) for r in second
    ]


def test_every_score_is_within_unit_interval_with_four_decimals() -> None:
    settings = AggregatorSettings(
        ranking_weights=RankingWeights(keyword_match=7, freshness=0.001, server_reputation=3, length_penalty=1)
    )
    results = [raw("react " * n, source_time=NOW - timedelta(days=n), length=n * 900) for n in range(50)]
    for scored in rank_results(results, query="react", settings=settings, now=NOW):
        assert 0.0 <= scored.score <= 1.0
        assert scored.score == round(scored.score, 4)
        for component in (
            scored.breakdown.keyword_match,
            scored.breakdown.freshness,
            scored.breakdown.server_reputation,
            scored.breakdown.length_penalty,
        ):
            assert 0.0 <= component <= 1.0
