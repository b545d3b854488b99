"""Removing duplicate and near-duplicate results from a ranked list.

Walking the list best first, a result is a duplicate when its normalised content equals an
earlier one's, or when its normalised Levenshtein similarity to a result already kept is
above the threshold; so the highest-ranked instance always stays.

Cost stays bounded: each candidate is compared only with the results already kept, pairs
whose length ratio rules out the threshold are skipped without computing a distance (see
``KeptTexts``), and near-duplicate search stops once ``limit`` results are kept. After that point the rest is
only checked for exact duplicates (a set lookup), which is what makes
``duplicates`` — and so the metadata's ``totalResultsDedup`` — exact whenever fewer than
``limit`` distinct results exist, and an upper bound on distinct results otherwise.
"""

from __future__ import annotations

import bisect
import math
import string
from collections.abc import Sequence
from dataclasses import dataclass

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
    kept_normalised = KeptTexts()
    duplicates = 0
    for item in ranked:
        norm = normalise(item.raw.content)
        if norm in seen:
            duplicates += 1
            continue
        seen.add(norm)
        if len(kept) >= limit:
            continue
        if kept_normalised.has_near_duplicate(norm, threshold):
            duplicates += 1
            continue
        kept.append(item)
        kept_normalised.add(norm)
    return DedupOutcome(kept=kept, duplicates=duplicates)


class KeptTexts:
    """Normalised texts already kept, ordered by length for the length-ratio bound.

    Normalised similarity is 1 - distance / longer length, and the distance is at least
    the length difference, so similarity <= shorter / longer: only texts whose length
    lies strictly between ``len * threshold`` and ``len / threshold`` can be more than
    ``threshold`` similar. A binary search finds that window; the rest are never compared.
    """

    def __init__(self) -> None:
        self._lengths: list[int] = []
        self._texts: list[str] = []

    def add(self, text: str) -> None:
        at = bisect.bisect_right(self._lengths, len(text))
        self._lengths.insert(at, len(text))
        self._texts.insert(at, text)

    def has_near_duplicate(self, candidate: str, threshold: float) -> bool:
        """Whether ``candidate`` is more than ``threshold`` similar to a kept text."""
        if threshold >= 1.0 or not self._texts:
            return False
        size = len(candidate)
        low = bisect.bisect_right(self._lengths, math.floor(size * threshold))
        high = len(self._lengths) if threshold <= 0.0 else bisect.bisect_left(self._lengths, size / threshold)
        if low >= high:
            return False
        # Imported at the first comparison: rapidfuzz's 2 MB serve only a query that
        # aggregates results, never a start.
        from rapidfuzz import process
        from rapidfuzz.distance import Levenshtein

        # One C call scores the whole window; the score cutoff lets rapidfuzz abandon a pair
        # as soon as its distance bound is exceeded.
        best = process.extractOne(
            candidate,
            self._texts[low:high],
            scorer=Levenshtein.normalized_similarity,
            processor=None,
            score_cutoff=threshold,
        )
        return best is not None and best[1] > threshold


def is_near_duplicate(candidate: str, kept: Sequence[str], threshold: float) -> bool:
    """Whether ``candidate`` is more than ``threshold`` similar to any of ``kept``."""
    texts = KeptTexts()
    for text in kept:
        texts.add(text)
    return texts.has_near_duplicate(candidate, threshold)
