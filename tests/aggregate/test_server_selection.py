import pytest

from mcp_aggregator.aggregate import ServerRule
from mcp_aggregator.aggregate.server_selection import ServerSelection, select_servers

RULES = (
    ServerRule(pattern="documentation|library|package", servers=("context7",)),
    ServerRule(pattern=r"\bcode\b|class|function", servers=("serena", "context7")),
    ServerRule(pattern="remember|memory", servers=("memory", "offline")),
)
AVAILABLE = ("context7", "serena", "memory")


@pytest.mark.parametrize(
    ("query", "explicit", "expected"),
    [
        ("Which LIBRARY for dates?", (), ServerSelection(("context7",), ("context7",), (), 0)),
        ("library function docs", (), ServerSelection(("context7",), ("context7",), (), 0)),
        ("show the Class Foo", (), ServerSelection(("serena", "context7"), ("serena", "context7"), (), 1)),
        ("what do you remember", (), ServerSelection(("memory", "offline"), ("memory",), ("offline",), 2)),
        ("weather tomorrow", (), ServerSelection(AVAILABLE, AVAILABLE, (), None)),
        ("library", ("memory",), ServerSelection(("memory",), ("memory",), (), None)),
        (
            "anything",
            ("offline", "serena"),
            ServerSelection(("offline", "serena"), ("serena",), ("offline",), None),
        ),
    ],
)
def test_selection_follows_explicit_list_then_first_matching_rule_then_all(
    query: str, explicit: tuple[str, ...], expected: ServerSelection
) -> None:
    assert select_servers(query, rules=RULES, explicit=explicit, available=AVAILABLE) == expected


def test_rules_are_searched_not_anchored() -> None:
    rules = (ServerRule(pattern="hooks", servers=("context7",)),)
    selection = select_servers("react hooks?", rules=rules, explicit=(), available=AVAILABLE)
    assert selection.rule_index == 0


def test_no_rules_and_no_servers_selects_nothing() -> None:
    assert select_servers("q", rules=(), explicit=(), available=()) == ServerSelection((), (), (), None)


def test_names_repeated_in_a_rule_are_asked_once() -> None:
    rules = (ServerRule(pattern=".*", servers=("memory", "memory", "serena")),)
    assert select_servers("q", rules=rules, explicit=(), available=AVAILABLE).queried == ("memory", "serena")
