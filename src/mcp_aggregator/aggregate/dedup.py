"""Removing duplicate and near-duplicate results from a ranked list.

Walking the list best first, a result is a duplicate when its normalised content equals an
earlier one's, or when its normalised Levenshtein similarity to a result already kept is
above the threshold; so the highest-ranked instance always stays.

Cost stays bounded: each candidate is compared only with the results already kept, pairs
whose length ratio rules out the threshold are skipped without computing a distance, and
near-duplicate search stops once ``limit`` results are kept. After that point the rest is
only checked for exact duplicates (a set lookup), which is what makes
``duplicates`` — and so the metadata's ``totalResultsDedup`` — exact whenever fewer than
``limit`` distinct results exist, and an upper bound on distinct results otherwise.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

from mcp_aggregator.aggregate.ranking import ScoredResult

_TRIM = string.punctuation + string.whitespace + "\u2026\u201c\u201d\u2018\u2019\u00ab\u00bb"


@dataclass(frozen=True, slots=True)
class DedupOutcome:
    """``kept``: at most ``limit`` results, best first; ``duplicates``: how many were
    recognised as duplicates (exact or near)."""

    kept: list[ScoredResult]
    duplicates: int


def normalise(content: str) -> str:
    """Lowercase, whitespace collapsed to single spaces, punctuation trimmed at both ends."""
    return " ".join(content.lower().split()).strip(_TRIM)


def deduplicate(ranked: Sequence[ScoredResult], *, threshold: float, limit: int) -> DedupOutcome:
    """Drop duplicates from ``ranked`` (best first), keeping at most ``limit`` results.

    ``threshold`` is the similarity in [0, 1] that must be exceeded for a near-duplicate;
    1.0 turns near-duplicate detection off (only exact duplicates go).
    """
    seen: set[str] = set()
    kept: list[ScoredResult] = []
    kept_normalised: list[str] = []
    duplicates = 0
    for item in ranked:
        norm = normalise(item.raw.content)
        if norm in seen:
            duplicates += 1
            continue
        seen.add(norm)
        if len(kept) >= limit:
            continue
        if is_near_duplicate(norm, kept_normalised, threshold):
            duplicates += 1
            continue
        kept.append(item)
        kept_normalised.append(norm)
    return DedupOutcome(kept=kept, duplicates=duplicates)


def is_near_duplicate(candidate: str, kept: Sequence[str], threshold: float) -> bool:
    """Whether ``candidate`` is more than ``threshold`` similar to any of ``kept``.

    Normalised similarity is 1 - distance / longer length, and the distance is at least
    the length difference, so similarity ≤ shorter / longer: pairs whose length ratio is
    not above the threshold cannot qualify and are skipped.
    """
    if threshold >= 1.0:
        return False
    size = len(candidate)
    for other in kept:
        other_size = len(other)
        longer = max(size, other_size)
        if longer == 0 or min(size, other_size) / longer <= threshold:
            continue
        if Levenshtein.normalized_similarity(candidate, other, score_cutoff=threshold) > threshold:
            return True
    return False
