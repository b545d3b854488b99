"""From a user's question to what a literal search tool can match.

Many real search tools match a substring (a memory graph, file names, a git log grep, an
issue tracker's title search): the whole question "How do I implement React hooks for
state management?" is found nowhere, while "react hook" and "state management" are. This
module derives those sub-queries, purely and deterministically:

- phrases: consecutive content words that the question writes together (only spaces or
  hyphens between them), as pairs, plus any quoted phrase; content words are those that
  are neither stop words nor generic question words ("implement", "example", "best");
- keywords: the content words one by one, the most specific first — identifiers
  (``useState``, ``http2``), then capitalised names (``React``), then long words;
- the last word of each, when lowercase, is made singular (``hooks`` → ``hook``), because the singular is
  a substring of the plural and literal matching then finds both;
- words are lowercased, except identifiers (``useState``): literal tools are mostly
  case-insensitive, and the case-sensitive ones (file name globs) mostly hold lowercase.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from mcp_aggregator.text import REQUEST_WORDS, STOP_WORDS

GENERIC_WORDS: frozenset[str] = frozenset(
    [
        "implement",
        "implementing",
        "implemented",
        "implementation",
        "example",
        "examples",
        "way",
        "ways",
        "best",
        "good",
        "better",
        "work",
        "works",
        "working",
        "make",
        "making",
        "build",
        "building",
        "thing",
        "things",
        "something",
        "anything",
        "know",
        "learn",
        "understand",
        "explain",
        "difference",
        "differences",
        "vs",
        "versus",
        "also",
        "like",
        "really",
        "just",
        "kind",
        "sort",
        "correct",
        "right",
        "proper",
        "properly",
        "possible",
        "able",
        "usage",
        "used",
        "help",
        "question",
        "questions",
        "idea",
        "ideas",
        "look",
        "looking",
        "handle",
        "handling",
        "deal",
        "dealing",
        "go",
        "going",
    ]
)
_TOKEN = re.compile(r"[^\W_]+")
_QUOTED = re.compile(r"[\"“”]([^\"“”]{2,80})[\"“”]")
_PHRASE_GAP = re.compile(r"[\s-]+")
_IDENTIFIER = re.compile(r"[a-z][A-Z]|[A-Za-z]\d|\d[A-Za-z]")
_SENTENCE_END = re.compile(r"[.!?]\s*$")
_LONG_WORD = 7


@dataclass(frozen=True, slots=True)
class _Word:
    text: str
    start: int
    end: int
    content: bool


def keyword_queries(question: str, limit: int) -> tuple[str, ...]:
    """At most ``limit`` sub-queries: quoted phrases, word pairs, then single keywords.

    Never the whole question itself (that is sent anyway), never the same text twice
    (case-insensitively); empty when the question has no content words.
    """
    words = _words(question)
    candidates = [_lowered(match.group(1).strip()) for match in _QUOTED.finditer(question)]
    candidates.extend(_pairs(question, words))
    candidates.extend(_by_salience(question, [w for w in words if w.content]))
    seen = {" ".join(question.lower().split())}
    out: list[str] = []
    for candidate in candidates:
        key = candidate.lower()
        if key in seen or not key:
            continue
        seen.add(key)
        out.append(candidate)
        if len(out) == limit:
            break
    return tuple(out)


def singular(word: str) -> str:
    """A lowercase plural's singular by the regular rules; other words (names such as
    ``Postgres``, identifiers) unchanged."""
    lower = word.lower()
    if len(word) <= 3 or not word.isalpha() or word != lower:
        return word
    if lower.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if lower.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if lower.endswith("s") and not lower.endswith(("ss", "us", "is", "os")):
        return word[:-1]
    return word


def _words(question: str) -> list[_Word]:
    out = []
    for match in _TOKEN.finditer(question):
        text = match.group()
        lower = text.lower()
        content = (
            len(text) > 1 and lower not in STOP_WORDS and lower not in REQUEST_WORDS and lower not in GENERIC_WORDS
        )
        out.append(_Word(text, match.start(), match.end(), content))
    return out


def _pairs(question: str, words: list[_Word]) -> list[str]:
    pairs = []
    for left, right in itertools.pairwise(words):
        if left.content and right.content and _PHRASE_GAP.fullmatch(question[left.end : right.start]):
            pairs.append(_lowered(question[left.start : right.start] + singular(right.text)))
    return pairs


def _by_salience(question: str, words: list[_Word]) -> list[str]:
    def key(indexed: tuple[int, _Word]) -> tuple[int, int]:
        index, word = indexed
        if _IDENTIFIER.search(word.text):
            rank = 0
        elif word.text[0].isupper() and not _starts_sentence(question, word):
            rank = 1
        elif len(word.text) >= _LONG_WORD:
            rank = 2
        else:
            rank = 3
        return rank, index

    return [_lowered(singular(word.text)) for _, word in sorted(enumerate(words), key=key)]


def _lowered(text: str) -> str:
    """Lowercase, but identifiers such as ``useState`` or ``http2`` as written."""
    return _TOKEN.sub(lambda m: m.group() if _IDENTIFIER.search(m.group()) else m.group().lower(), text)


def _starts_sentence(question: str, word: _Word) -> bool:
    before = question[: word.start]
    return not before.strip() or _SENTENCE_END.search(before) is not None
