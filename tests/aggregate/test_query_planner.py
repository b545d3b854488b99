import pytest

from mcp_aggregator.aggregate.query_planner import keyword_queries, singular


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "How do I implement React hooks for state management?",
            ("react hook", "state management", "react", "management", "hook", "state"),
        ),
        # Identifiers first (as written), then names (lowercased, never made singular).
        (
            "why does useState reset after a Redux dispatch",
            ("useState reset", "redux dispatch", "useState", "redux", "dispatch", "reset"),
        ),
        # A quoted phrase comes first; names are not made singular.
        (
            'configure "connection pooling" in Postgres',
            ("connection pooling", "postgres", "configure", "connection", "pooling"),
        ),
        # Hyphenated words stay one phrase; punctuation breaks a phrase.
        ("redux-toolkit, slices", ("redux-toolkit", "toolkit", "redux", "slice")),
        # Nothing but stop and generic words: nothing to send beyond the question.
        ("how do I do it?", ()),
        # A one-word question is already sent whole.
        ("useState", ()),
    ],
)
def test_keyword_queries_are_phrases_then_salient_words(question: str, expected: tuple[str, ...]) -> None:
    assert keyword_queries(question, 6) == expected


def test_keyword_queries_stop_at_the_limit_and_never_repeat() -> None:
    queries = keyword_queries("hooks hooks Hooks state hooks", 3)
    assert len(queries) == len({q.lower() for q in queries}) <= 3
    assert keyword_queries("a b c d e f g h i j k l m n o p", 2) == ()


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("hooks", "hook"),
        ("libraries", "library"),
        ("classes", "class"),
        ("matches", "match"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("Postgres", "Postgres"),
        ("bus", "bus"),
        ("k8s", "k8s"),
    ],
)
def test_singular_only_touches_regular_lowercase_plurals(word: str, expected: str) -> None:
    assert singular(word) == expected
