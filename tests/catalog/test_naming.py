from __future__ import annotations

import pytest

from mcp_aggregator.catalog import (
    CLIENT_SAFE,
    assign_exposed_names,
    exposed_name,
    namespace,
    parse_namespaced,
)


@pytest.mark.parametrize(
    ("name", "server", "tool"),
    [
        ("server-a.api.v2.create", "server-a", "api.v2.create"),
        ("git.git_log", "git", "git_log"),
        ("a.b", "a", "b"),
    ],
)
def test_namespaced_names_split_at_the_first_dot_only(name: str, server: str, tool: str) -> None:
    assert parse_namespaced(name) == (server, tool)
    assert namespace(server, tool) == name


@pytest.mark.parametrize("name", ["nodot", ".tool", "server.", ""])
def test_parse_refuses_names_that_are_not_namespaced(name: str) -> None:
    with pytest.raises(ValueError, match="Not a namespaced name"):
        parse_namespaced(name)


def test_plain_names_keep_their_readable_form() -> None:
    assert exposed_name("git", "git_log") == "git__git_log"
    assert exposed_name("git", "git_log", separator="-") == "git-git_log"


@pytest.mark.parametrize(
    ("server", "tool"),
    [
        ("server-a", "api.v2.create"),
        ("s", "x" * 200),
        ("a" * 60, "tool"),
        ("s", "weird name/with:chars"),
    ],
)
def test_exposed_names_are_client_safe_and_stable(server: str, tool: str) -> None:
    first = exposed_name(server, tool)
    assert CLIENT_SAFE.match(first), first
    assert exposed_name(server, tool) == first


def test_shortened_names_stay_unique() -> None:
    long_a = "x" * 100 + "a"
    long_b = "x" * 100 + "b"
    names = assign_exposed_names([("s", long_a), ("s", long_b), ("s", "api.v2"), ("s", "api_v2")])
    assert len(set(names.values())) == 4
    assert all(CLIENT_SAFE.match(n) for n in names.values())
    assert names[("s", "api_v2")] == "s__api_v2", "a name that needs no change keeps its form"


def test_same_tool_on_two_servers_never_collides() -> None:
    names = assign_exposed_names([("a-server", "search"), ("b-server", "search")])
    assert names[("a-server", "search")] != names[("b-server", "search")]
