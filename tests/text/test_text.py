import pytest

from mcp_aggregator.aggregate.keyword_matcher import query_terms
from mcp_aggregator.text import search_terms, split_identifier, stem, stem_prefix, words


@pytest.mark.parametrize(
    "family",
    [
        ["manage", "managed", "manages", "managing", "management", "manager"],
        ["hook", "hooks", "hooked"],
        ["state", "states", "stated"],
        ["implement", "implementation", "implementing", "implemented"],
        ["query", "queries", "queried", "querying"],
        ["connect", "connection", "connected", "connecting", "connections"],
        ["document", "documentation", "documents", "documented"],
        ["search", "searching", "searches", "searched"],
        ["package", "packages", "packaging"],
        ["run", "running", "runs"],
        ["library", "libraries"],
        ["class", "classes"],
    ],
)
def test_a_word_family_shares_one_stem(family: list[str]) -> None:
    assert len({stem(word) for word in family}) == 1


@pytest.mark.parametrize("word", ["a", "is", "use", "css", "http2", "42", "v1.2"])
def test_short_and_non_alphabetic_tokens_are_left_alone(word: str) -> None:
    assert stem(word) == word


def test_words_are_lowercased_and_split_on_non_word_characters() -> None:
    assert words("useState() — React_Hooks, café 2026!") == ["usestate", "react", "hooks", "café", "2026"]


def test_query_terms_drop_stop_words_and_repeat_stems() -> None:
    assert query_terms("How do I implement React hooks for state management? Hooks!") == (
        "implement",
        "react",
        "hook",
        "state",
        "manag",
    )


def test_query_of_only_stop_words_keeps_them() -> None:
    assert query_terms("how do I") == ("how", "do", "i")


def test_query_without_words_has_no_terms() -> None:
    assert query_terms("?!") == ()


def test_query_terms_drop_words_of_asking_too() -> None:
    assert query_terms("show me the open tickets") == ("open", "ticket")


VOCABULARY_FOR_PREFIXES = [
    *("ability", "sensibility", "skies", "dying", "lying", "tying", "gently", "early", "only"),
    *("organization", "relational", "generously", "happiness", "queries", "running", "idly"),
    *("management", "hopping", "agreed", "feed", "news", "skis", "cries", "argument"),
]


@pytest.mark.parametrize("word", VOCABULARY_FOR_PREFIXES)
def test_every_word_starts_with_the_prefix_of_its_stem(word: str) -> None:
    assert word.startswith(stem_prefix(stem(word)))


def test_search_terms_split_identifiers_drop_stop_words_and_stem() -> None:
    assert search_terms("getCurrentPrices of the files_listing") == ["get", "current", "price", "file", "list"]


def test_search_terms_make_han_characters_one_term_each() -> None:
    assert search_terms("必应搜索 bing") == ["必", "应", "搜", "索", "bing"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("get_current_stock_price", ["get", "current", "stock", "price"]),
        ("get-weibo-trending", ["get", "weibo", "trending"]),
        ("readFile", ["read", "file"]),
        ("getHTTPResponse", ["get", "http", "response"]),
        ("api.v2.create", ["api", "v2", "create"]),
        ("XMLToJSON", ["xml", "to", "json"]),
    ],
)
def test_tool_names_split_into_lowercase_words(name: str, expected: list[str]) -> None:
    assert split_identifier(name) == expected
