import random

import pytest

from mcp_aggregator.aggregate.keyword_matcher import KeywordMatcher
from mcp_aggregator.aggregate.stemmer import query_terms, stem, tokenize

VOCABULARY = [
    "query",
    "queries",
    "queried",
    "querying",
    "hook",
    "hooks",
    "hooked",
    "state",
    "states",
    "statement",
    "manage",
    "managed",
    "management",
    "managing",
    "run",
    "running",
    "runs",
    "fly",
    "flies",
    "happy",
    "happiness",
    "react",
    "reactive",
    "re_act",
    "snake_case_hooks",
    "HOOKS",
    "États",
    "état",
    "naïve",
    "café",
    "2026",
    "v2",
    "x_y",
    "the",
    "a",
    "of",
    "is",
]


def naive_counts(terms: tuple[str, ...], text: str) -> dict[str, int]:
    counts = dict.fromkeys(terms, 0)
    for token in tokenize(text):
        if stem(token) in counts:
            counts[stem(token)] += 1
    return counts


@pytest.mark.parametrize("seed", range(20))
def test_matcher_counts_exactly_what_stemming_every_token_counts(seed: int) -> None:
    rng = random.Random(seed)
    query = " ".join(rng.choices(VOCABULARY, k=rng.randint(1, 5)))
    terms = query_terms(query)
    matcher = KeywordMatcher(terms)
    for _ in range(30):
        separators = [" ", ", ", "-", "_", ".\n", "(", ")"]
        text = "".join(rng.choice(VOCABULARY) + rng.choice(separators) for _ in range(rng.randint(0, 40)))
        assert matcher.counts(text) == naive_counts(terms, text), (query, text)


def test_matcher_without_terms_scores_zero() -> None:
    assert KeywordMatcher(()).score("anything at all") == 0.0
    assert KeywordMatcher(()).counts("anything") == {}


def test_text_without_any_prefix_skips_the_regex_and_scores_zero() -> None:
    assert KeywordMatcher(("hook",)).counts("nothing relevant here") == {"hook": 0}
