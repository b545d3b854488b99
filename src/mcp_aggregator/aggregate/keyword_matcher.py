"""Counting a query's stems in result texts, fast enough for a thousand results per query."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mcp_aggregator.text import REQUEST_WORDS, STOP_WORDS, stem, stem_prefix, words

_SATURATION = 0.1
_NOT_A_TERM = -1
# Beyond this many prefixes one combined regex scans faster than one regex per prefix.
_SEPARATE_SCANS_MAX = 16


def query_terms(query: str) -> tuple[str, ...]:
    """Distinct stems of the query's words, in first-seen order, without stop words and
    words of asking ("show me", "I want").

    A query made only of such words ("how do I") keeps all its words, so it still matches.
    """
    tokens = words(query)
    content = [token for token in tokens if token not in STOP_WORDS and token not in REQUEST_WORDS] or tokens
    return tuple(dict.fromkeys(stem(token) for token in content))


class KeywordMatcher:
    """Built once per query; ``scores(texts)`` gives the keyword-match component of each.

    Equivalent to stemming every word of a text (``text.words``) and counting those equal
    to a query stem, but only words that could stem to a query stem are stemmed: those
    starting with the stem's ``text.stem_prefix``.

    How it stays fast (the texts are searched, not tokenized):
    - only the shortest of those prefixes are searched for — a token starting with a
      longer one starts with a shorter one too — so each candidate token is found once;
    - each prefix is its own regex led by the literal, which the regex engine scans for
      about as fast as ``str.find`` (a leading ``\\b`` would make it try every position);
      past ``_SEPARATE_SCANS_MAX`` prefixes, one regex of them all is cheaper;
    - all texts of a call are searched in one string, and the per-match work (mapping a
      match back to its text, counting) is done by numpy, not a Python loop.
    """

    def __init__(self, terms: Sequence[str]) -> None:
        self.terms = tuple(dict.fromkeys(terms))
        prefixes = {stem_prefix(term) for term in self.terms}
        shortest = sorted(p for p in prefixes if not any(q != p and p.startswith(q) for q in prefixes))
        # "_" is a word character to the regex but a separator to the tokenizer: texts are
        # searched with "_" replaced by a space, so \w means what tokenize means. The
        # lookbehind, tried only where the prefix occurs, is the word boundary before it.
        # The group makes ``split`` return the tokens between the gaps that locate them.
        # Each prefix costs a scan of all the texts, so a long query gets one regex of all
        # of them instead, which costs one slower scan whatever the number of prefixes.
        if len(shortest) <= _SEPARATE_SCANS_MAX:
            patterns = [rf"({re.escape(p)}(?<!\w{re.escape(p)})\w*)" for p in shortest]
        else:
            patterns = [rf"(\b(?:{'|'.join(re.escape(p) for p in shortest)})\w*)"]
        self._candidates = tuple(re.compile(pattern) for pattern in patterns)
        # Token -> index in ``terms`` or _NOT_A_TERM; bounded by the distinct candidate
        # tokens of one query's results.
        self._term_of_token: dict[str, int] = {}

    def counts(self, text: str) -> dict[str, int]:
        """Occurrences of each query stem among the text's token stems."""
        return dict(zip(self.terms, self.counts_of_all([text]).tolist()[0], strict=True))

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
        counts = self.counts_of_all(texts)
        shares = counts / (counts + _SATURATION)
        # Added term by term, in ``terms`` order, so each total is bit-for-bit the plain
        # Python loop's (a term not found adds exactly 0.0).
        total = np.zeros(len(texts))
        for column in shares.T:
            total += column
        result: list[float] = (total / len(self.terms)).tolist()
        return result

    def counts_of_all(self, texts: Sequence[str]) -> npt.NDArray[np.intp]:
        """Occurrences of each query stem per text: shape (len(texts), len(terms))."""
        size = len(self.terms)
        flat = np.zeros(len(texts) * size, dtype=np.intp)
        if texts and self._candidates:
            # Lowered one by one: lowering can change a text's length, and the offsets
            # must be those of the lowered texts.
            lowered = [text.lower() for text in texts]
            starts = np.cumsum([0, *(len(text) + 1 for text in lowered[:-1])])
            joined = " ".join(lowered).replace("_", " ")
            for candidates in self._candidates:
                flat += self._flat_counts(candidates.split(joined), starts, size)
        return flat.reshape(len(texts), size)

    def _flat_counts(self, parts: list[str], starts: npt.NDArray[np.intp], size: int) -> npt.NDArray[np.intp]:
        """Counts, indexed text * size + term, from ``split``'s alternating gaps and tokens."""
        tokens = parts[1::2]
        term_of = self._term_of_token
        for token in set(tokens).difference(term_of):
            key = stem(token)
            term_of[token] = self.terms.index(key) if key in self.terms else _NOT_A_TERM
        terms = np.fromiter(map(term_of.__getitem__, tokens), dtype=np.intp, count=len(tokens))
        token_starts = np.cumsum(np.fromiter(map(len, parts), dtype=np.intp, count=len(parts)))[0:-1:2]
        texts = np.searchsorted(starts, token_starts, side="right") - 1
        found = terms != _NOT_A_TERM
        return np.bincount(texts[found] * size + terms[found], minlength=len(starts) * size)
