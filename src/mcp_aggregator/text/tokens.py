"""Words of free text and of identifiers, and the search terms made of them."""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import chain

from mcp_aggregator.text.stemmer import stem
from mcp_aggregator.text.stop_words import STOP_WORDS

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def words(text: str) -> list[str]:
    """Lowercased runs of letters and digits ("_" separates, camelCase does not)."""
    return _WORD.findall(text.lower())


def split_identifier(name: str) -> list[str]:
    """Words of a tool name: snake_case, kebab-case, camelCase and dotted.names, lowercased.

    >>> split_identifier("getHTTPResponse_v2.fetch-all")
    ['get', 'http', 'response', 'v2', 'fetch', 'all']
    """
    out: list[str] = []
    for part in _WORD.findall(name):
        out.extend(_split_part(part))
    return out


def _split_part(part: str) -> list[str]:
    if part.islower() or part.isdigit():  # most words: no camel humps to find
        return [part]
    return [w.lower() for w in _CAMEL.split(part) if w]


def search_terms(text: str) -> list[str]:
    """Search terms of free text: identifier splitting, stop words dropped, Snowball stems.

    Han, kana and hangul characters become one term each, as they have no spaces.
    """
    # Split on whitespace first (no match of _WORD spans it) and keep each chunk's terms:
    # chunks repeat across a catalogue's descriptions, and one regex pass over the whole
    # text of 10,000 tools cost more than all the rest of their lexical indexing. map and
    # chain keep the loop over chunks in C.
    return list(chain.from_iterable(map(_chunk_terms, text.split())))


@lru_cache(maxsize=131_072)
def _chunk_terms(chunk: str) -> tuple[str, ...]:
    if len(parts := _WORD.findall(chunk)) == 1:
        return _part_terms(parts[0])
    return tuple(term for part in parts for term in _part_terms(part))


@lru_cache(maxsize=131_072)
def _part_terms(part: str) -> tuple[str, ...]:
    terms: list[str] = []
    for word in _split_part(part):
        if not word.isascii() and _CJK.search(word):
            terms.extend(ch for ch in word if not ch.isspace())
        elif word not in STOP_WORDS:
            terms.append(stem(word))
    return tuple(terms)
