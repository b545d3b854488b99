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
        ("Which LIBRARY for dates?", (), ServerSelection(("context7",), ("context7",), (), 0, "rule")),
        ("library function docs", (), ServerSelection(("context7",), ("context7",), (), 0, "rule")),
        (
            "show the Class Foo",
            (),
            ServerSelection(("serena", "context7"), ("serena", "context7"), (), 1, "rule"),
        ),
        (
            "what do you remember",
            (),
            ServerSelection(("memory", "offline"), ("memory",), ("offline",), 2, "rule"),
        ),
        ("weather tomorrow", (), ServerSelection(AVAILABLE, AVAILABLE, (), None, "all")),
        ("library", ("memory",), ServerSelection(("memory",), ("memory",), (), None, "explicit")),
        (
            "anything",
            ("offline", "serena"),
            ServerSelection(("offline", "serena"), ("serena",), ("offline",), None, "explicit"),
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


def test_without_a_matching_rule_the_servers_whose_tools_fit_are_asked() -> None:
    asked: list[str] = []

    def found() -> list[str]:
        asked.append("weather")
        return ["memory", "offline", "serena", "memory"]

    selection = select_servers("weather tomorrow", rules=RULES, explicit=(), available=AVAILABLE, found=found)
    assert selection == ServerSelection(("memory", "serena"), ("memory", "serena"), (), None, "toolSearch")
    assert asked == ["weather"]


def test_tool_search_is_not_consulted_when_a_rule_or_the_caller_decides() -> None:
    def found() -> list[str]:
        raise AssertionError("tool search must not run")

    assert select_servers("library", rules=RULES, explicit=(), available=AVAILABLE, found=found).how == "rule"
    assert select_servers("x", rules=RULES, explicit=("serena",), available=AVAILABLE, found=found).how == "explicit"


def test_tool_search_finding_no_available_server_falls_back_to_all() -> None:
    selection = select_servers("weather", rules=(), explicit=(), available=AVAILABLE, found=lambda: ["offline"])
    assert (selection.queried, selection.how) == (AVAILABLE, "all")
