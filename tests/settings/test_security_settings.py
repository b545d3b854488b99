"""Every security setting refuses a bad value with one message naming the field."""

from __future__ import annotations

import re

import pytest

from mcp_aggregator.admin.auth import check_bind_allowed
from mcp_aggregator.catalog.tool_pins import NewToolPolicy
from mcp_aggregator.errors import ConfigError
from mcp_aggregator.settings import parse_settings
from tests.conftest import REPO

OAUTH = "issuer: 'https://id.example.com', audience: 'https://gw.example.com/mcp', jwks_url: 'https://id.example.com/j'"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("serve: {admin_token: short}", "serve.admin_token: String should have at least 16 characters"),
        ("serve: {allowed_hosts: [Evil.example]}", "serve.allowed_hosts: must be lowercase host names or host:port"),
        ("serve: {allowed_hosts: ['a/b']}", "serve.allowed_hosts: must be lowercase host names or host:port"),
        ("serve: {allowed_origins: [evil.example]}", "serve.allowed_origins: must be origins like https://host[:port]"),
        ("serve: {allowed_origins: ['https://e.example/p']}", "serve.allowed_origins: must be origins like"),
        ("serve: {mcp_tokens: [short]}", "serve.mcp_tokens: [0]: a token must be at least 16 characters, got 5"),
        ("serve: {mcp_tokens: ['a space 0123456789']}", "serve.mcp_tokens: [0]: a token must be printable ASCII"),
        (
            "serve: {admin_token: same-token-0123456789, mcp_tokens: [same-token-0123456789]}",
            "serve.mcp_tokens: must not contain the admin token",
        ),
        ("serve: {oauth: {audience: a, jwks_url: 'https://i/j'}}", "serve.oauth.issuer: Field required"),
        (
            "serve: {oauth: {issuer: 'https://i', audience: a, jwks_url: 'ftp://i/j'}}",
            "serve.oauth.jwks_url: must be an absolute http(s) URL, got 'ftp://i/j'",
        ),
        (
            "serve: {oauth: {issuer: 'https://i', audience: '', jwks_url: 'https://i/j'}}",
            "serve.oauth.audience: must not be empty",
        ),
        (f"serve: {{oauth: {{{OAUTH}, algorithms: [HS256]}}}}", "serve.oauth.algorithms: must be asymmetric JWS"),
        (f"serve: {{oauth: {{{OAUTH}, algorithms: [none]}}}}", "serve.oauth.algorithms: must be asymmetric JWS"),
        (f"serve: {{oauth: {{{OAUTH}, leeway_secs: 1000}}}}", "serve.oauth.leeway_secs: Input should be less than"),
        (f"serve: {{oauth: {{{OAUTH}, scopes: [x]}}}}", "serve.oauth.scopes: unknown field"),
        ("serve: {max_body_bytes: 10}", "serve.max_body_bytes: Input should be greater than or equal to 1024"),
        ("serve: {replica_url: '10.0.0.5:8765'}", "serve.replica_url: must be a base URL like http://10.0.0.5:8765"),
        ("serve: {replica_url: 'http://h:1/mcp'}", "serve.replica_url: must be a base URL like http://10.0.0.5:8765"),
        ("serve: {mcp_max_body_bytes: lots}", "serve.mcp_max_body_bytes: Input should be a valid integer"),
        ("serve: {rate_limit: {burst: 2}}", "serve.rate_limit.requests_per_minute: Field required"),
        ("serve: {rate_limit: {requests_per_minute: 0}}", "serve.rate_limit.requests_per_minute: Input should be"),
        ("serve: {rate_limit: {requests_per_minute: 9, burst: 0}}", "serve.rate_limit.burst: Input should be"),
        ("security: {pin_tool_definitions: maybe}", "security.pin_tool_definitions: Input should be a valid boolean"),
        ("security: {new_tools: sometimes}", "security.new_tools: Input should be 'allow' or 'hold'"),
        ("security: {colour: red}", "security.colour: unknown field"),
        (
            "servers:\n  - {name: s, transport: http, base_url: 'http://h', headers: {X-A: \"a\\r\\nX-Evil: 1\"}}",
            "servers[0].headers: header 'X-A': the value must not contain CR, LF or other control characters",
        ),
        (
            "servers:\n  - {name: s, transport: http, base_url: 'http://h', headers: {\"X\\nA\": b}}",
            "servers[0].headers: header name 'X\\nA' is not a valid HTTP header name",
        ),
        (
            "servers:\n  - {name: s, transport: stdio, command: x, env: {'A=B': c}}",
            "servers[0].env: env 'A=B': names must be non-empty without '=' or NUL",
        ),
    ],
)
def test_a_bad_security_value_gets_one_message_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings(text)
    assert message in str(info.value)


def test_secrets_are_not_echoed_in_the_messages() -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings("serve: {mcp_tokens: ['sk-short']}")
    assert "sk-short" not in str(info.value)


def test_the_defaults_are_the_safe_ones() -> None:
    settings = parse_settings("")
    serve = settings.serve
    assert serve.admin_token is None and serve.mcp_tokens == () and serve.oauth is None
    assert serve.max_body_bytes == 1_048_576 and serve.rate_limit is None
    assert settings.security.pin_tool_definitions is True
    assert settings.security.new_tools is NewToolPolicy.ALLOW


def test_a_full_security_configuration_parses() -> None:
    settings = parse_settings(
        "serve:\n"
        "  host: 0.0.0.0\n"
        "  allowed_hosts: [gw.example.com, 'proxy.example.com:8443']\n"
        "  allowed_origins: ['https://console.example.com']\n"
        "  mcp_tokens: ['client-token-0123456789']\n"
        f"  oauth: {{{OAUTH}, required_scopes: [mcp]}}\n"
        "  rate_limit: {requests_per_minute: 120}\n"
        "security: {new_tools: hold}\n"
    )
    assert settings.serve.oauth is not None and settings.serve.oauth.required_scopes == ("mcp",)
    assert settings.serve.rate_limit is not None and settings.serve.rate_limit.burst_size == 12
    assert settings.security.new_tools is NewToolPolicy.HOLD


def test_the_security_page_example_is_valid_and_may_bind_beyond_loopback() -> None:
    text = (REPO / "docs" / "security.md").read_text(encoding="utf-8")
    match = re.search(r"## Exposing the gateway.*?```yaml\n(.*?)```", text, re.S)
    assert match is not None
    serve = parse_settings(match.group(1)).serve
    check_bind_allowed(serve)
    assert serve.host == "0.0.0.0" and serve.oauth is not None and serve.mcp_tokens
