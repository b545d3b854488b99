from __future__ import annotations

import mcp_types as types
import pytest

from mcp_aggregator.catalog import Catalog, RouteStrategy
from mcp_aggregator.catalog.catalog import EntriesByServer
from mcp_aggregator.errors import AmbiguousToolError, ServerNotFoundError, ToolNotFoundError


def tool(name: str) -> types.Tool:
    return types.Tool(name=name, description=f"{name} tool", input_schema={"type": "object"})


@pytest.fixture
def catalog() -> Catalog:
    return Catalog.build(
        {
            "a-server": [tool("search_tool"), tool("only_a"), tool("api.v2.create")],
            "b-server": [tool("search_tool")],
        },
        known_servers=["c-server"],
    )


@pytest.mark.parametrize(
    ("name", "server", "expected", "strategy"),
    [
        ("search_tool", "a-server", ("a-server", "search_tool"), RouteStrategy.EXPLICIT_SERVER),
        ("a-server.search_tool", None, ("a-server", "search_tool"), RouteStrategy.NAMESPACE_RESOLVED),
        ("b-server.search_tool", None, ("b-server", "search_tool"), RouteStrategy.NAMESPACE_RESOLVED),
        ("a-server.api.v2.create", None, ("a-server", "api.v2.create"), RouteStrategy.NAMESPACE_RESOLVED),
        ("b-server__search_tool", None, ("b-server", "search_tool"), RouteStrategy.EXPOSED_NAME),
        ("only_a", None, ("a-server", "only_a"), RouteStrategy.LOOKUP_RESOLVED),
        ("api.v2.create", None, ("a-server", "api.v2.create"), RouteStrategy.LOOKUP_RESOLVED),
    ],
)
def test_routes_resolve_in_contract_order(
    catalog: Catalog, name: str, server: str | None, expected: tuple[str, str], strategy: RouteStrategy
) -> None:
    route = catalog.resolve_route(name, server)
    assert (route.server, route.tool) == expected
    assert route.strategy is strategy


def test_an_original_name_on_two_servers_is_ambiguous_and_lists_them(catalog: Catalog) -> None:
    with pytest.raises(AmbiguousToolError) as info:
        catalog.resolve_route("search_tool")
    assert info.value.servers == ["a-server", "b-server"]
    assert "a-server, b-server" in str(info.value)


def test_unknown_tool_is_not_found(catalog: Catalog) -> None:
    with pytest.raises(ToolNotFoundError, match=r"Tool not found: nope"):
        catalog.resolve_route("nope")


def test_unknown_explicit_server_is_not_found(catalog: Catalog) -> None:
    with pytest.raises(ServerNotFoundError):
        catalog.resolve_route("search_tool", "zzz")


def test_known_server_without_the_tool_is_tool_not_found(catalog: Catalog) -> None:
    with pytest.raises(ToolNotFoundError, match=r"c-server\.search_tool"):
        catalog.resolve_route("search_tool", "c-server")


def test_a_tool_listed_twice_by_one_server_appears_once() -> None:
    catalog = Catalog.build({"s": [tool("x"), tool("x")]})
    assert [e.canonical for e in catalog.entries] == ["s.x"]


def entries_of(catalog: Catalog) -> list[tuple[str, str, str, str]]:
    return [(e.server, e.original_name, e.canonical, e.exposed) for e in catalog.entries]


@pytest.mark.parametrize(
    "listings",
    [
        # (the first build's servers, the second's): the second reuses what it can.
        ({"a": ["x", "y"], "b": ["x"]}, {"a": ["x", "y"], "b": ["x"], "c": ["z"]}),
        ({"a": ["x", "y"], "b": ["x"]}, {"b": ["x"]}),
        ({"a": ["x", "x", "y"]}, {"a": ["x", "x", "y"], "b": ["w"]}),
        # "a.b" and "a_b" sanitise alike: one is salted, as assign_exposed_names decides.
        ({"s": ["a.b"]}, {"s": ["a.b"], "t": ["q"], "u": ["a_b"]}),
        ({"s": ["a.b", "a_b"]}, {"s": ["a.b", "a_b"], "t": ["q"]}),
        ({"s": ["a.b", "a_b"], "t": ["q"]}, {"s": ["a.b"], "t": ["q"]}),
    ],
)
def test_a_catalog_built_reusing_the_last_ones_entries_equals_one_built_afresh(
    listings: tuple[dict[str, list[str]], dict[str, list[str]]],
) -> None:
    first, second = listings
    made: dict[str, list[types.Tool]] = {}
    for listing in (first, second):
        for server, names in listing.items():
            made.setdefault(server, [tool(name) for name in names])
    reuse: EntriesByServer = {}
    for listing in (first, second):
        tools = {server: made[server] for server in listing}
        reused = Catalog.build(tools, reuse=reuse)
        assert entries_of(reused) == entries_of(Catalog.build(tools))


def test_a_server_listing_the_same_tools_keeps_its_entries_and_a_changed_one_gets_new_ones() -> None:
    reuse: EntriesByServer = {}
    a, b = [tool("x"), tool("y")], [tool("x")]
    first = Catalog.build({"a": a, "b": b}, reuse=reuse)
    second = Catalog.build({"a": list(a), "b": [tool("x")]}, reuse=reuse)
    assert [e for e in second.entries if e.server == "a"] == [e for e in first.entries if e.server == "a"]
    assert all(x is y for x, y in zip(second.for_server("a"), first.for_server("a"), strict=True))
    assert second.for_server("b")[0] is not first.for_server("b")[0]
