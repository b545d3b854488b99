import pytest

from mcp_aggregator.aggregate.stemmer import query_terms, stem, tokenize


@pytest.mark.parametrize(
    "family",
    [
        ["manage", "managed", "manages", "managing", "management", "manager"],
        ["hook", "hooks", "hooked"],
        ["state", "states", "stated", "statement"],
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


def test_tokenize_lowercases_and_splits_on_non_word_characters() -> None:
    assert tokenize("useState() — React_Hooks, café 2026!") == ["usestate", "react", "hooks", "café", "2026"]


def test_query_terms_drop_stop_words_and_repeat_stems() -> None:
    assert query_terms("How do I implement React hooks for state management? Hooks!") == (
        "impl",
        "react",
        "hook",
        "stat",
        "manag",
    )


def test_query_of_only_stop_words_keeps_them() -> None:
    assert query_terms("how do I") == ("how", "do", "i")


def test_query_without_words_has_no_terms() -> None:
    assert query_terms("?!") == ()
