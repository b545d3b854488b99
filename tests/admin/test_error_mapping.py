"""Every gateway error has one HTTP status and body, decided in one place."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_aggregator.admin.error_mapping import http_error, validation_errors
from mcp_aggregator.errors import (
    AggregationFailedError,
    AggregatorError,
    AmbiguousToolError,
    ConfigError,
    IllegalTransitionError,
    InvalidQueryError,
    LimitExceededError,
    RegistryError,
    SearchError,
    ServerExistsError,
    ServerNotFoundError,
    ServerUnavailableError,
    StateError,
    ToolNotFoundError,
    UpstreamCallError,
    UpstreamClosedError,
    UpstreamConnectError,
    UpstreamTimeoutError,
)


@pytest.mark.parametrize(
    ("error", "status", "detail"),
    [
        (ServerExistsError("git"), 409, "Server already exists: git"),
        (ServerNotFoundError("x"), 404, "Server not found: x"),
        (ToolNotFoundError("git.nope"), 404, "Tool not found: git.nope"),
        (LimitExceededError("server limit reached"), 422, "server limit reached"),
        (ConfigError("bad", path="servers[0].url"), 422, "servers[0].url: bad"),
        (InvalidQueryError("maxResults", "too big"), 422, {"field": "maxResults", "reason": "too big"}),
        (
            AggregationFailedError(["a"], ["a: down"]),
            502,
            {
                "message": "Aggregation failed: all servers unavailable",
                "attemptedServers": ["a"],
                "errors": ["a: down"],
            },
        ),
        (
            ServerUnavailableError("git", "ERROR"),
            503,
            {"message": "Server git is unavailable (status ERROR)", "server": "git", "status": "ERROR"},
        ),
        (StateError("cannot disconnect"), 409, "cannot disconnect"),
        (IllegalTransitionError("DEGRADED", "disconnect"), 409, "illegal transition: disconnect in state DEGRADED"),
        (UpstreamTimeoutError("git", "slow"), 504, {"message": "git: slow", "server": "git"}),
        (UpstreamClosedError("git", "gone"), 503, {"message": "git: gone", "server": "git"}),
        (UpstreamConnectError("git", "refused"), 503, {"message": "git: refused", "server": "git"}),
        (RegistryError("cannot open the registry"), 503, "cannot open the registry"),
        (SearchError("index broken"), 503, "index broken"),
        (AggregatorError("unexpected"), 500, "unexpected"),
    ],
)
def test_gateway_errors_map_to_status_and_detail(error: AggregatorError, status: int, detail: Any) -> None:
    assert http_error(error) == (status, detail)


def test_ambiguous_tool_is_409_listing_the_servers() -> None:
    status, detail = http_error(AmbiguousToolError("search", ["b", "a"]))
    assert status == 409
    assert (detail["tool"], detail["servers"]) == ("search", ["a", "b"])


def test_upstream_tool_error_is_502_with_its_json_rpc_code() -> None:
    status, detail = http_error(UpstreamCallError("git", "bad args", code=-32602, data={"x": 1}))
    assert status == 502
    assert (detail["server"], detail["code"], detail["data"]) == ("git", -32602, {"x": 1})


def test_validation_messages_name_the_field_and_drop_the_input() -> None:
    errors = [
        {"type": "missing", "loc": ("body", "connection_config"), "msg": "Field required", "input": {"h": "s"}},
        {"type": "int_parsing", "loc": ("query", "k"), "msg": "Input should be a valid integer", "input": "x"},
        {"type": "json_invalid", "loc": ("body",), "msg": "JSON decode error", "input": "{"},
    ]
    assert validation_errors(errors) == [
        {"type": "missing", "loc": ("body", "connection_config"), "msg": "connection_config: Field required"},
        {"type": "int_parsing", "loc": ("query", "k"), "msg": "k: Input should be a valid integer"},
        {"type": "json_invalid", "loc": ("body",), "msg": "JSON decode error"},
    ]
