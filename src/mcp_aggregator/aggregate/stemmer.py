"""A small English suffix stemmer and tokenizer for keyword matching.

Not the full Porter algorithm: it only has to map a word family (``manage``, ``managed``,
``manages``, ``managing``, ``management``) to one key, applied the same way to the query
and to every result. Over-stemming (``element`` → ``ele``) is acceptable there; a missed
family costs a keyword match. Stems are cached because results repeat words a lot.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TOKEN = re.compile(r"[^\W_]+")
_VOWEL = re.compile(r"[aeiouy]")
_MIN_STEM = 3

_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each few for
    from further had has have having he her here hers herself him himself his how i if in into
    is it its itself just me more most my myself no nor not now of off on once only or other
    our ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up use using
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves please show tell get give find want need
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS_TEXT.split())

# Longest first, so "ational" is tried before "al".
_SUFFIXES_TEXT = """
    ational ization fulness ousness iveness tional ation ement ment ness ance ence able ible
    ical ful ous ive ize ise ism ist ity ion ant ent al er or ly ic
"""
_DERIVATIONAL_SUFFIXES: tuple[str, ...] = tuple(sorted(_SUFFIXES_TEXT.split(), key=len, reverse=True))


def tokenize(text: str) -> list[str]:
    """Lowercased runs of letters and digits."""
    return _TOKEN.findall(text.lower())


def query_terms(query: str) -> tuple[str, ...]:
    """Distinct stems of the query's non-stop words, in first-seen order.

    A query made only of stop words ("how do I") keeps all its words, so it still matches.
    """
    tokens = tokenize(query)
    content = [token for token in tokens if token not in STOP_WORDS] or tokens
    return tuple(dict.fromkeys(stem(token) for token in content))


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """Stem one lowercase token; tokens of three letters or fewer and non-alphabetic
    tokens come back unchanged."""
    if len(word) <= _MIN_STEM or not word.isalpha():
        return word
    word = _strip_plural(word)
    word = _strip_inflection(word)
    for _ in range(2):
        shorter = _strip_derivation(word)
        if shorter == word:
            break
        word = shorter
    return _finish(word)


def _strip_plural(word: str) -> str:
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _strip_inflection(word: str) -> str:
    for suffix in ("ing", "ed"):
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            if len(base) >= _MIN_STEM and _VOWEL.search(base):
                return _undouble(base)
    return word


def _strip_derivation(word: str) -> str:
    for suffix in _DERIVATIONAL_SUFFIXES:
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            if len(base) >= _MIN_STEM and _VOWEL.search(base):
                return base
            return word
    return word


def _undouble(word: str) -> str:
    if len(word) > _MIN_STEM and word[-1] == word[-2] and word[-1] not in "lsz":
        return word[:-1]
    return word


def _finish(word: str) -> str:
    if word.endswith("e") and len(word) > _MIN_STEM:
        word = word[:-1]
    if word.endswith("y") and len(word) > _MIN_STEM and word[-2] not in "aeiou":
        word = word[:-1] + "i"
    return word
