"""Composite relevance scoring, pure: the same results, query, settings and ``now`` always
give the same scores and the same order.

score = sum of normalised weight * component, every component in [0, 1]:
- keyword match: mean over the query's stems of tf / (tf + 0.1) — one occurrence of a
  term counts 0.91 and repeats add little, so coverage of the query's terms decides and a
  long text repeating them cannot outweigh its length penalty;
- freshness: 2^(-age / half-life), age from the result's own timestamp when it has one,
  else from when it was retrieved; future times count as age 0;
- server reputation: per server from the settings, else the default;
- length penalty: 1 up to ``lengthPenaltyStartChars``, then start / length (1 = no penalty).

Scores are rounded to 4 decimals and that rounded value is what orders results, so the
published scores and the order always agree. Ties break by server name, then the content
itself (lexicographically; stable across processes, unlike ``hash()``), then arrival order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from mcp_aggregator.aggregate.config import AggregatorSettings
from mcp_aggregator.aggregate.keyword_matcher import KeywordMatcher, query_terms
from mcp_aggregator.aggregate.result_extraction import RawResult

_SCORE_DECIMALS = 4
_SECONDS_PER_DAY = 86_400.0


class ScoreBreakdown(NamedTuple):
    """The unweighted components, each in [0, 1]."""

    keyword_match: float
    freshness: float
    server_reputation: float
    length_penalty: float


class ScoredResult(NamedTuple):
    """A result with its score; ``score`` is in [0, 1], never NaN."""

    raw: RawResult
    score: float
    breakdown: ScoreBreakdown


def rank_results(
    results: Sequence[RawResult], *, query: str, settings: AggregatorSettings, now: datetime
) -> list[ScoredResult]:
    """Score every result and sort best first (total, deterministic order)."""
    keyword_scores = KeywordMatcher(query_terms(query)).scores([raw.content for raw in results])
    weights = settings.ranking_weights.normalised()
    half_life = settings.freshness_half_life_days * _SECONDS_PER_DAY
    start_chars = settings.length_penalty_start_chars
    reputations = {server: _unit(settings.reputation_of(server)) for server in {r.server for r in results}}
    # Results of one server usually share their retrieval time, so freshness is computed
    # once per distinct time.
    freshness_at: dict[datetime, float] = {}
    keyed: list[tuple[float, str, str, int, ScoredResult]] = []
    for index, (raw, keyword_score) in enumerate(zip(results, keyword_scores, strict=True)):
        when = raw.source_time or raw.retrieved_at
        fresh = freshness_at.get(when)
        if fresh is None:
            fresh = freshness_at[when] = freshness(when, now=now, half_life_secs=half_life)
        reputation = reputations[raw.server]
        length = length_penalty(raw.original_length, start_chars=start_chars)
        # Every component is in [0, 1] by construction, so combine()'s clamping is skipped.
        score = _weighted(keyword_score, fresh, reputation, length, weights)
        scored = ScoredResult(raw, score, ScoreBreakdown(keyword_score, fresh, reputation, length))
        # The arrival index is unique, so tuple comparison never reaches ``scored``.
        keyed.append((-scored.score, raw.server, raw.content, index, scored))
    keyed.sort()
    return [entry[4] for entry in keyed]


def keyword_match(terms: Sequence[str], content: str) -> float:
    """Saturating share of query stems found in ``content``; 0 when there are no terms."""
    return KeywordMatcher(terms).score(content)


def freshness(when: datetime, *, now: datetime, half_life_secs: float) -> float:
    """Exponential decay with the given half-life; 1.0 for now or the future."""
    age = (now - when).total_seconds()
    if age <= 0.0:
        return 1.0
    return _unit(math.pow(2.0, -age / half_life_secs))


def length_penalty(length: int, *, start_chars: int) -> float:
    """1.0 up to ``start_chars``, then falling as start / length."""
    if length <= start_chars:
        return 1.0
    return _unit(start_chars / length)


def combine(breakdown: ScoreBreakdown, weights: tuple[float, float, float, float]) -> float:
    """Weighted sum, rounded; weights must sum to 1. Each component is clamped to [0, 1]
    (NaN counts as 0) first, so one bad component cannot poison the score."""
    keyword, fresh, reputation, length = breakdown
    return _weighted(_unit(keyword), _unit(fresh), _unit(reputation), _unit(length), weights)


def _weighted(
    keyword: float, fresh: float, reputation: float, length: float, weights: tuple[float, float, float, float]
) -> float:
    """``combine`` of components already in [0, 1]."""
    w_keyword, w_fresh, w_reputation, w_length = weights
    total = w_keyword * keyword + w_fresh * fresh + w_reputation * reputation + w_length * length
    return round(_unit(total), _SCORE_DECIMALS)


def _unit(value: float) -> float:
    if 0.0 <= value <= 1.0:
        return value
    # NaN fails every comparison and so lands on 0.0 here.
    return 1.0 if value > 1.0 else 0.0
