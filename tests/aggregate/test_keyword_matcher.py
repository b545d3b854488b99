import random

import pytest

from mcp_aggregator.aggregate.keyword_matcher import KeywordMatcher, query_terms
from mcp_aggregator.text import stem, words

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
    "dying",
    "die",
    "ability",
    "able",
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
    for token in words(text):
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


def test_text_without_any_candidate_token_counts_zero() -> None:
    assert KeywordMatcher(("hook",)).counts("nothing relevant here") == {"hook": 0}


def naive_score(terms: tuple[str, ...], text: str) -> float:
    """The scoring formula written plainly: mean over stems of tf / (tf + 0.1)."""
    if not terms:
        return 0.0
    total = 0.0
    for count in naive_counts(terms, text).values():
        if count:
            total += count / (count + 0.1)
    return total / len(terms)


# Prefixes nested in one another ("man" / "mana", "sta" / "stat"), tokens whose lowercase
# is longer than they are ("İ" lowers to two characters), NUL and other separators.
BATCH_VOCABULARY = [
    *VOCABULARY,
    "man",
    "men",
    "manual",
    "mana",
    "sta",
    "stat",
    "stats",
    "statistics",
    "İstanbul",
    "İİİ",
    "ǅemal",
    "ΑΣ",
    "\x00",
    "",
]


@pytest.mark.parametrize("seed", range(20))
def test_scores_of_many_texts_equal_scoring_each_text_alone_exactly(seed: int) -> None:
    rng = random.Random(seed)
    query = " ".join(rng.choices(BATCH_VOCABULARY, k=rng.randint(1, 6)))
    terms = query_terms(query)
    separators = [" ", "_", "-", "\n", "İ", "\x00", ""]
    texts = [
        "".join(rng.choice(BATCH_VOCABULARY) + rng.choice(separators) for _ in range(rng.randint(0, 12)))
        for _ in range(rng.randint(0, 40))
    ]
    matcher = KeywordMatcher(terms)
    assert matcher.scores(texts) == [naive_score(terms, text) for text in texts], (query, texts)
    expected_counts = [list(naive_counts(terms, text).values()) for text in texts]
    assert matcher.counts_of_all(texts).tolist() == expected_counts


def test_a_token_starting_with_two_nested_prefixes_counts_once() -> None:
    matcher = KeywordMatcher(("man", "manag"))
    assert matcher.counts("man management manager manual") == {"man": 1, "manag": 2}


def test_tokens_at_the_edges_of_neighbouring_texts_count_for_their_own_text() -> None:
    matcher = KeywordMatcher(("hook",))
    assert matcher.counts_of_all(["hook", "hooks", "", "xhook", "hook_hook"]).tolist() == [[1], [1], [0], [0], [2]]


@pytest.mark.parametrize("seed", range(5))
def test_a_query_with_many_prefixes_counts_the_same_through_one_combined_regex(seed: int) -> None:
    rng = random.Random(seed)
    words = [*BATCH_VOCABULARY, *("".join(rng.choices("abcdefghilmnorstu", k=rng.randint(2, 8))) for _ in range(60))]
    terms = query_terms(" ".join(words))
    texts = [" ".join(rng.choices(words, k=rng.randint(0, 30))) for _ in range(20)]
    assert shortest_prefix_count(terms) > 16
    assert KeywordMatcher(terms).scores(texts) == [naive_score(terms, text) for text in texts]


def shortest_prefix_count(terms: tuple[str, ...]) -> int:
    """How many prefixes the matcher searches for: those no other prefix starts."""
    prefixes = {term[:-1] if len(term) > 3 else term for term in terms}
    return sum(1 for p in prefixes if not any(q != p and p.startswith(q) for q in prefixes))
