"""English stems from the Snowball (Porter 2) stemmer, through PyStemmer's C library.

One stemmer for the whole gateway: tool search indexes tool texts and queries with it, and
the aggregator counts a query's stems in result texts with it, so "managing" finds
"management" in both.
"""

from __future__ import annotations

from functools import lru_cache

import Stemmer

_ENGLISH = Stemmer.Stemmer("english")
# Porter 2's exceptional forms "dying", "lying", "tying" share one letter with their stem.
_IRREGULAR_PREFIXES = {"die": "d", "lie": "l", "tie": "t"}
_SHORT = 3


@lru_cache(maxsize=131_072)
def stem(word: str) -> str:
    """The Snowball English stem of one lowercase word (digits and short words unchanged)."""
    if len(word) <= _SHORT - 1 or not word.isalpha():
        return word
    result: str = _ENGLISH.stemWord(word)
    return result


def stem_prefix(stemmed: str) -> str:
    """A prefix every word whose stem is ``stemmed`` starts with.

    Snowball only strips a word's last letters or rewrites its last one, so a stem minus
    its last letter starts the word (``sk`` of ``sky`` from ``skies``, ``abi`` of ``abil``
    from ``ability``); a stem of two letters starts it whole; only the exceptional ``dying``,
    ``lying`` and ``tying`` need their own. Lets the aggregator look for candidate words of
    a query stem without stemming every word of every result.
    """
    if stemmed in _IRREGULAR_PREFIXES:
        return _IRREGULAR_PREFIXES[stemmed]
    return stemmed[:-1] if len(stemmed) >= _SHORT else stemmed
