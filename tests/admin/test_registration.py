"""Registration bodies are validated by ``ServerConfig``; errors land on the API's field names."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.exceptions import RequestValidationError

from mcp_aggregator.admin.registration import server_config_from
from mcp_aggregator.admin.schemas import ServerCreate
from mcp_aggregator.settings import Transport
from tests.admin.conftest import API, admin_settings, http_body, serve_admin
from tests.registry.conftest import Database


def body(**changes: Any) -> ServerCreate:
    data: dict[str, Any] = {
        "name": "docs",
        "transport_type": "HTTP",
        "connection_config": {"base_url": "https://docs.example.com/mcp", "headers": {"A": "${TOKEN}"}},
    }
    return ServerCreate.model_validate(data | changes)


def errors_of(create: ServerCreate) -> list[tuple[str, str]]:
    with pytest.raises(RequestValidationError) as caught:
        server_config_from(create)
    return [(".".join(err["loc"]), err["msg"]) for err in caught.value.errors()]


@pytest.mark.parametrize("transport", ["HTTP", "http", "Http"])
def test_transport_type_is_case_insensitive(transport: str) -> None:
    config = server_config_from(body(transport_type=transport))
    assert config.transport is Transport.HTTP
    assert config.headers == {"A": "${TOKEN}"}, "references stay unexpanded until connect time"


@pytest.mark.parametrize(
    ("changes", "location", "message"),
    [
        ({"name": "Docs"}, "body.name", "must match ^[a-z][a-z0-9_-]*$"),
        ({"name": "d" * 256}, "body.name", "must be at most 255 characters"),
        ({"description": "x" * 1001}, "body.description", "at most 1000 characters"),
        ({"transport_type": "websocket"}, "body.transport_type", "must be one of stdio, sse, http"),
        ({"health_check_url": "not a url"}, "body.health_check_url", "absolute http(s) URL"),
        ({"connection_config": {}}, "body.connection_config.base_url", "required for transport http"),
        ({"connection_config": {"base_url": "ftp://x"}}, "body.connection_config.base_url", "absolute http(s)"),
        (
            {"connection_config": {"base_url": "http://h/mcp", "command": "x"}},
            "body.connection_config.command",
            "not allowed for transport http",
        ),
        (
            {"connection_config": {"base_url": "http://h/mcp", "env": {"A": "b"}}},
            "body.connection_config",
            "only allowed for transport stdio",
        ),
        (
            {"transport_type": "stdio", "connection_config": {"command": "x", "headers": {"A": "b"}}},
            "body.connection_config.headers",
            "not allowed for transport stdio",
        ),
    ],
)
def test_br_001_refusals_are_located_at_the_api_field(changes: dict[str, Any], location: str, message: str) -> None:
    [(loc, msg)] = errors_of(body(**changes))
    assert loc == location
    assert message in msg


async def test_a_header_with_cr_lf_is_refused_naming_the_field(sqlite_db: Database) -> None:
    async with serve_admin(admin_settings(sqlite_db)) as admin:
        body = http_body("smuggle", "http://127.0.0.1:9/mcp", headers={"X-A": "a\r\nX-Injected: 1"})
        answer = await admin.http.post(f"{API}/servers", json=body)
        assert answer.status_code == 422
        [error] = answer.json()["detail"]
        assert error["loc"] == ["body", "connection_config", "headers"]
        assert "the value must not contain CR, LF" in error["msg"]
        assert "X-Injected" not in answer.text, "the refused value is not echoed"


def test_a_registration_carries_a_result_cache_and_a_wrong_one_names_its_field() -> None:
    remote = {"base_url": "https://docs.example.com/mcp"}
    config = server_config_from(body(connection_config=remote | {"cache": {"ttl_secs": 30, "tools": ["get_*"]}}))
    assert config.cache is not None and config.cache.covers("get_page") and not config.cache.covers("put_page")
    assert config.connection_config()["cache"] == {"ttl_secs": 30, "tools": ["get_*"]}
    assert errors_of(body(connection_config=remote | {"cache": {"ttl_secs": 0}})) == [
        ("body.connection_config.cache.ttl_secs", "Input should be greater than 0")
    ]


def test_openapi_and_a2a_registrations_name_their_fields_when_wrong() -> None:
    config = server_config_from(
        body(transport_type="openapi", connection_config={"spec": "/srv/books.yaml", "operations": ["getBook"]})
    )
    assert config.transport is Transport.OPENAPI and config.operations == ("getBook",)
    assert errors_of(body(transport_type="OPENAPI", connection_config={"base_url": "https://b.example"})) == [
        ("body.connection_config.spec", "required for transport openapi")
    ]
    assert errors_of(body(transport_type="OPENAPI", connection_config={"spec": "b.yaml", "operations": ["GO /x"]})) == [
        ("body.connection_config.operations", "[0]: 'GO /x' is neither an operationId nor 'METHOD /path'")
    ]
    assert errors_of(body(transport_type="A2A", connection_config={"base_url": "agent.local"})) == [
        ("body.connection_config.base_url", "must be an absolute http(s) URL, got 'agent.local'")
    ]
