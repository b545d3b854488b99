"""Bad ``openapi`` and ``a2a`` server configuration is refused with one message naming the field."""

from __future__ import annotations

import pytest

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.settings import Transport, parse_settings


def error_of(server: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_settings(f"servers:\n  - {server}\n")
    return str(info.value)


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ("{name: s, transport: openapi}", "servers[0].spec: required for transport openapi"),
        ("{name: s, transport: openapi, spec: ''}", "servers[0].spec: must be a URL or a file path"),
        ("{name: s, transport: openapi, spec: 'ftp://h/o.json'}", "servers[0].spec: must be an absolute http(s) URL"),
        ("{name: s, transport: openapi, spec: o.json, base_url: /api}", "servers[0].base_url: must be an absolute"),
        (
            "{name: s, transport: openapi, spec: o.json, operations: []}",
            "servers[0].operations: must name at least one",
        ),
        (
            "{name: s, transport: openapi, spec: o.json, operations: ['FETCH /x']}",
            "servers[0].operations: [0]: 'FETCH /x' is neither an operationId nor 'METHOD /path'",
        ),
        (
            "{name: s, transport: openapi, spec: o.json, operations: [a, a]}",
            "servers[0].operations: names an operation twice",
        ),
        (
            "{name: s, transport: openapi, spec: o.json, command: x}",
            "servers[0].command: not allowed for transport openapi",
        ),
        (
            "{name: s, transport: openapi, spec: o.json, auth: {type: oauth, per_user: true}}",
            "servers[0].auth: per_user is not available for transport openapi",
        ),
        ("{name: s, transport: a2a}", "servers[0].base_url: required for transport a2a"),
        ("{name: s, transport: a2a, base_url: agent.local}", "servers[0].base_url: must be an absolute http(s) URL"),
        (
            "{name: s, transport: a2a, base_url: 'http://h', spec: o.json}",
            "servers[0].spec: not allowed for transport a2a",
        ),
        ("{name: s, transport: http, base_url: 'http://h', operations: [a]}", "servers[0].operations: not allowed"),
    ],
)
def test_bad_bridge_configuration_names_the_field(server: str, message: str) -> None:
    assert message in error_of(server)


def test_an_openapi_server_keeps_its_document_selection_and_headers_unexpanded() -> None:
    settings = parse_settings(
        "servers:\n  - {name: books, transport: openapi, spec: 'https://b.example/openapi.json',"
        " operations: [listBooks, 'POST /orders'], headers: {Authorization: 'Bearer ${T}'}}\n"
    )
    server = settings.servers[0]
    assert server.transport is Transport.OPENAPI
    assert server.connection_config() == {
        "spec": "https://b.example/openapi.json",
        "operations": ["listBooks", "POST /orders"],
        "headers": {"Authorization": "Bearer ${T}"},
    }
