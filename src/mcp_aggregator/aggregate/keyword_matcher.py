"""Counting a query's stems in result texts, fast enough for a thousand results per query."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from mcp_aggregator.aggregate.stemmer import stem

_SATURATION = 0.1
_SHORT = 3
_NOT_A_TERM = -1


class KeywordMatcher:
    """Built once per query; ``scores(texts)`` gives the keyword-match component of each.

    Equivalent to stemming every token of a text (see ``stemmer.tokenize``) and counting
    those equal to a query stem, but only tokens that could stem to a query stem are
    stemmed. That is sound because ``stem`` only strips suffixes, except that a final "y"
    may become "i" in stems longer than three letters: so a token's stem minus its last
    letter (or the whole stem, for three letters or fewer) is always a prefix of the token.

    Only the shortest of those prefixes are searched for (a token starting with a longer
    one starts with a shorter one too), so every candidate token is found by exactly one
    of them. Each is its own regex led by the literal prefix, which the regex engine scans
    for about as fast as ``str.find``; a ``\\b`` in front would make it try every position.
    All texts of a call are searched at once, joined by a space, and each match is mapped
    back to its text by offset.
    """

    def __init__(self, terms: Sequence[str]) -> None:
        self.terms = tuple(dict.fromkeys(terms))
        prefixes = {term[:-1] if len(term) > _SHORT else term for term in self.terms}
        shortest = sorted(p for p in prefixes if not any(q != p and p.startswith(q) for q in prefixes))
        # "_" is a word character to the regex but a separator to the tokenizer: texts are
        # searched with "_" replaced by a space, so \w means what tokenize means. The
        # lookbehind, checked only where the prefix occurs, is the word boundary before it.
        self._candidates = tuple(
            re.compile(rf"{re.escape(p)}(?<!\w{re.escape(p)})\w*") for p in shortest
        )
        self._term_of_token: dict[str, int] = {}

    def counts(self, text: str) -> dict[str, int]:
        """Occurrences of each query stem among the text's token stems."""
        return dict(zip(self.terms, self.counts_of_all([text])[0], strict=True))

    def score(self, text: str) -> float:
        """``scores([text])[0]``."""
        return self.scores([text])[0]

    def scores(self, texts: Sequence[str]) -> list[float]:
        """Per text, the mean over query stems of tf / (tf + 0.1): coverage decides,
        repeats add little.

        0.0 when the query has no terms. Always within [0, 1).
        """
        if not self.terms:
            return [0.0] * len(texts)
        size = len(self.terms)
        out: list[float] = []
        for counts in self.counts_of_all(texts):
            total = 0.0
            for count in counts:
                if count:
                    total += count / (count + _SATURATION)
            out.append(total / size)
        return out

    def counts_of_all(self, texts: Sequence[str]) -> list[list[int]]:
        """Per text, the occurrences of each query stem (in ``terms`` order)."""
        size = len(self.terms)
        counts = [[0] * size for _ in texts]
        if not self._candidates or not texts:
            return counts
        # Lowered one by one: lowering can change a text's length, and the offsets must be
        # those of the lowered texts.
        lowered = [text.lower() for text in texts]
        starts: list[int] = []
        offset = 0
        for text in lowered:
            starts.append(offset)
            offset += len(text) + 1
        joined = " ".join(lowered).replace("_", " ")
        term_of = self._term_of_token
        for candidates in self._candidates:
            for match in candidates.finditer(joined):
                token = match[0]
                term = term_of.get(token)
                if term is None:
                    term = term_of[token] = self._term_index(token)
                if term != _NOT_A_TERM:
                    counts[bisect.bisect_right(starts, match.start()) - 1][term] += 1
        return counts

    def _term_index(self, token: str) -> int:
        key = stem(token)
        return self.terms.index(key) if key in self.terms else _NOT_A_TERM
