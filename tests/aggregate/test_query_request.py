import pytest

from mcp_aggregator.aggregate import QueryRequest, parse_query_arguments
from mcp_aggregator.errors import InvalidQueryError

KNOWN = ("context7", "memory", "serena")


def parse(arguments: object) -> QueryRequest:
    return parse_query_arguments(arguments, known_servers=KNOWN, default_max_results=30)  # type: ignore[arg-type]


def test_query_alone_gets_the_configured_default_and_no_server_list() -> None:
    assert parse({"query": "react hooks"}) == QueryRequest(query="react hooks", max_results=30, servers=())


def test_configured_default_max_results_is_used_when_absent() -> None:
    request = parse_query_arguments({"query": "x"}, known_servers=KNOWN, default_max_results=50)
    assert request.max_results == 50


def test_all_arguments_are_kept_and_repeated_servers_asked_once() -> None:
    request = parse({"query": "q", "maxResults": 10, "servers": ["memory", "serena", "memory"]})
    assert request == QueryRequest(query="q", max_results=10, servers=("memory", "serena"))


def test_null_optional_arguments_count_as_absent() -> None:
    assert parse({"query": "q", "maxResults": None, "servers": None}) == QueryRequest("q", 30, ())


def test_integral_float_max_results_is_a_json_integer() -> None:
    assert parse({"query": "q", "maxResults": 40.0}).max_results == 40


def test_empty_server_list_means_all_servers() -> None:
    assert parse({"query": "q", "servers": []}).servers == ()


def test_query_of_exactly_10000_characters_is_accepted() -> None:
    assert len(parse({"query": "a" * 10_000}).query) == 10_000


@pytest.mark.parametrize(
    ("arguments", "field", "reason"),
    [
        ({"maxResults": 500}, "maxResults", "Must be between 10 and 100, got 500"),
        ({"maxResults": 9}, "maxResults", "Must be between 10 and 100, got 9"),
        ({"maxResults": 101}, "maxResults", "Must be between 10 and 100, got 101"),
        ({"maxResults": "20"}, "maxResults", "Must be an integer, got string"),
        ({"maxResults": 20.5}, "maxResults", "Must be an integer, got number"),
        ({"maxResults": True}, "maxResults", "Must be an integer, got boolean"),
        ({"query": ""}, "query", "Must be between 1 and 10000 characters, got 0"),
        ({"query": "a" * 10_001}, "query", "Must be between 1 and 10000 characters, got 10001"),
        ({"query": "   \n"}, "query", "Must contain non-whitespace characters"),
        ({"query": 42}, "query", "Must be a string, got integer"),
        ({"query": None}, "query", "Must be a string, got null"),
        ({"query": ["a"]}, "query", "Must be a string, got array"),
        ({"query": "bad \ud800 surrogate"}, "query", "Must be valid UTF-8"),
        ({"servers": "memory"}, "servers", "Must be an array of server names, got string"),
        ({"servers": {"a": 1}}, "servers", "Must be an array of server names, got object"),
        ({"servers": ["memory", 3]}, "servers", "Item 1 must be a string, got integer"),
        (
            {"servers": ["memory", "docs"]},
            "servers",
            "Unknown server 'docs'; known servers: context7, memory, serena",
        ),
        (
            {"servers": ["x", "y"]},
            "servers",
            "Unknown servers 'x', 'y'; known servers: context7, memory, serena",
        ),
        ({"max_results": 20}, "max_results", "Unknown argument; expected one of query, maxResults, servers"),
    ],
)
def test_invalid_argument_is_refused_with_field_and_exact_reason(
    arguments: dict[str, object], field: str, reason: str
) -> None:
    with pytest.raises(InvalidQueryError) as caught:
        parse({"query": "react hooks", **arguments})
    assert (caught.value.field, caught.value.reason) == (field, reason)
    assert str(caught.value) == f"Invalid query parameters: {field}: {reason}"


def test_missing_query_is_refused_as_required() -> None:
    with pytest.raises(InvalidQueryError) as caught:
        parse({"maxResults": 20})
    assert (caught.value.field, caught.value.reason) == ("query", "Required")


def test_missing_arguments_object_is_a_missing_query() -> None:
    with pytest.raises(InvalidQueryError) as caught:
        parse(None)
    assert caught.value.field == "query"


def test_errors_are_reported_in_fixed_field_order() -> None:
    with pytest.raises(InvalidQueryError) as caught:
        parse({"query": "", "maxResults": 500, "servers": ["nope"]})
    assert caught.value.field == "query"


def test_unknown_server_with_no_servers_configured_says_none_are_known() -> None:
    with pytest.raises(InvalidQueryError) as caught:
        parse_query_arguments({"query": "q", "servers": ["a"]}, known_servers=(), default_max_results=30)
    assert caught.value.reason == "Unknown server 'a'; known servers: none"
