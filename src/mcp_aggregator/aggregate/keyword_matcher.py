"""Counting a query's stems in result texts, fast enough for a thousand results per query."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcp_aggregator.aggregate.stemmer import stem

_SATURATION = 0.1
_SHORT = 3


class KeywordMatcher:
    """Built once per query; ``score(text)`` is the keyword-match component.

    Equivalent to stemming every token of the text (see ``stemmer.tokenize``) and counting
    those equal to a query stem, but only tokens that could stem to a query stem are
    stemmed. That is sound because ``stem`` only strips suffixes, except that a final "y"
    may become "i" in stems longer than three letters: so a token's stem minus its last
    letter (or the whole stem, for three letters or fewer) is always a prefix of the token,
    and one regex of those prefixes finds every candidate.
    """

    def __init__(self, terms: Sequence[str]) -> None:
        self.terms = tuple(dict.fromkeys(terms))
        self._prefixes = tuple(
            sorted({term[:-1] if len(term) > _SHORT else term for term in self.terms}, key=len, reverse=True)
        )
        alternatives = "|".join(re.escape(prefix) for prefix in self._prefixes)
        # "_" is a word character to the regex but a separator to the tokenizer: texts are
        # searched with "_" replaced by a space, so \b and \w mean what tokenize means.
        self._candidates = re.compile(rf"\b(?:{alternatives})\w*") if self.terms else None

    def counts(self, text: str) -> dict[str, int]:
        """Occurrences of each query stem among the text's token stems."""
        counts = dict.fromkeys(self.terms, 0)
        if self._candidates is None:
            return counts
        lowered = text.lower()
        if not any(prefix in lowered for prefix in self._prefixes):
            return counts
        for token in self._candidates.findall(lowered.replace("_", " ")):
            key = stem(token)
            if key in counts:
                counts[key] += 1
        return counts

    def score(self, text: str) -> float:
        """Mean over query stems of tf / (tf + 0.1): coverage decides, repeats add little.

        0.0 when the query has no terms. Always within [0, 1).
        """
        if not self.terms:
            return 0.0
        counts = self.counts(text)
        total = 0.0
        for count in counts.values():
            if count:
                total += count / (count + _SATURATION)
        return total / len(counts)
