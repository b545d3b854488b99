"""``auth: oauth`` in the config file and the API: what is accepted, and the error for what is not."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from mcp_aggregator.credentials import Grant, SecretBox
from mcp_aggregator.credentials.secret_box import KEY_ENV, KEY_FILE
from mcp_aggregator.errors import ConfigError
from mcp_aggregator.registry import redact_connection_config
from mcp_aggregator.settings import parse_settings, secret_values
from tests.admin.conftest import serve_admin
from tests.conftest import settings_for

HTTP = "name: s, transport: http, base_url: 'https://mcp.example.com/mcp'"
EXCHANGING = "per_user: true, client_id: gw, client_secret: '${GW_SECRET}'"


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_settings(text)
    return str(info.value)


def test_auth_oauth_is_accepted_as_a_word_or_a_mapping() -> None:
    plain = parse_settings(f"servers: [{{{HTTP}, auth: oauth}}]").servers[0]
    assert plain.auth is not None and plain.auth.grant is Grant.AUTHORIZATION_CODE and plain.auth.client_id is None
    full = parse_settings(
        f"servers: [{{{HTTP}, auth: {{type: oauth, client_id: gw, client_secret: '${{GW_SECRET}}', "
        "scopes: 'read write', grant: client_credentials}}]"
    ).servers[0]
    assert full.auth is not None and full.auth.scopes == ("read", "write")
    assert full.connection_config()["auth"]["client_secret"] == "${GW_SECRET}"
    sse = parse_settings("servers: [{name: e, transport: sse, url: 'https://e.example.com/sse', auth: oauth}]")
    assert sse.servers[0].auth is not None


def test_token_exchange_is_accepted_as_true_or_a_mapping_with_the_access_token_type_by_default() -> None:
    plain = parse_settings(f"servers: [{{{HTTP}, auth: {{{EXCHANGING}, token_exchange: true}}}}]").servers[0].auth
    assert plain is not None and plain.token_exchange is not None
    assert plain.token_exchange.subject_token_type == "urn:ietf:params:oauth:token-type:access_token"
    assert plain.grant is Grant.AUTHORIZATION_CODE and plain.token_exchange.audience is None
    full = parse_settings(
        f"servers: [{{{HTTP}, auth: {{per_user: true, grant: client_credentials, client_id: gw, client_secret: s, "
        "token_exchange: {audience: tracker, scopes: 'read write', resource: 'https://mcp.example.com/mcp', "
        "subject_token_type: 'urn:ietf:params:oauth:token-type:jwt'}}}]"
    ).servers[0]
    assert full.auth is not None and full.auth.token_exchange is not None
    assert full.auth.token_exchange.scopes == ("read", "write")
    assert full.connection_config()["auth"]["token_exchange"]["audience"] == "tracker"
    off = parse_settings(f"servers: [{{{HTTP}, auth: {{per_user: true, token_exchange: false}}}}]").servers[0]
    assert off.auth is not None and off.auth.token_exchange is None


@pytest.mark.parametrize(
    ("server", "message"),
    [
        (
            "{name: s, transport: stdio, command: x, auth: oauth}",
            "servers[0].auth: only allowed for transport http, sse, openapi or a2a",
        ),
        (f"{{{HTTP}, auth: basic}}", "servers[0].auth: must be 'oauth' or a mapping with type: oauth, got 'basic'"),
        (f"{{{HTTP}, auth: {{type: saml}}}}", "servers[0].auth.type: Input should be 'oauth'"),
        (f"{{{HTTP}, auth: {{grant: implicit}}}}", "servers[0].auth.grant: Input should be 'authorization_code' or"),
        (
            f"{{{HTTP}, auth: {{grant: client_credentials}}}}",
            "grant client_credentials needs client_id and client_secret",
        ),
        (f"{{{HTTP}, auth: {{client_secret: s3cret}}}}", "servers[0].auth: client_secret given without client_id"),
        (f"{{{HTTP}, auth: {{scopes: ['a b']}}}}", "servers[0].auth.scopes: each scope must be a non-empty word"),
        (f"{{{HTTP}, auth: {{client_id: ''}}}}", "servers[0].auth.client_id: String should have at least 1 character"),
        (f"{{{HTTP}, auth: {{clientid: x}}}}", "servers[0].auth.clientid: unknown field"),
        (
            f"{{{HTTP}, auth: {{per_user: true, grant: client_credentials, client_id: gw, client_secret: s}}}}",
            "servers[0].auth: per_user needs grant authorization_code (each user signs in) or token_exchange",
        ),
        (
            f"{{{HTTP}, auth: {{client_id: gw, client_secret: s, token_exchange: true}}}}",
            "servers[0].auth: token_exchange needs per_user: true (it trades each user's own token)",
        ),
        (
            f"{{{HTTP}, auth: {{per_user: true, token_exchange: true, client_id: gw}}}}",
            "servers[0].auth: token_exchange needs client_id and client_secret",
        ),
        (
            f"{{{HTTP}, auth: {{{EXCHANGING}, token_exchange: {{subject_token_type: jwt}}}}}}",
            "servers[0].auth.token_exchange.subject_token_type: must be a token type URN (RFC 8693 §3)",
        ),
        (
            f"{{{HTTP}, auth: {{{EXCHANGING}, token_exchange: {{resource: tracker}}}}}}",
            "servers[0].auth.token_exchange.resource: must be an absolute http(s) URL without a fragment",
        ),
        (
            f"{{{HTTP}, auth: {{{EXCHANGING}, token_exchange: {{audiences: [a]}}}}}}",
            "servers[0].auth.token_exchange.audiences: unknown field",
        ),
        (
            f"{{{HTTP}, auth: {{{EXCHANGING}, token_exchange: {{scopes: ['a b']}}}}}}",
            "servers[0].auth.token_exchange.scopes: each scope must be a non-empty word",
        ),
        (
            f"{{{HTTP}, headers: {{Authorization: 'Bearer x'}}, auth: oauth}}",
            "servers[0].headers: an Authorization header cannot be combined with auth: oauth",
        ),
    ],
)
def test_a_bad_auth_field_is_refused_naming_the_field(server: str, message: str) -> None:
    assert message in error_of(f"servers: [{server}]")


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("{callback_url: 'not a url'}", "credentials.callback_url: must be an absolute http(s) URL"),
        ("{refresh_ahead_secs: -1}", "credentials.refresh_ahead_secs: Input should be greater than or equal to 0"),
        ("{sign_in_ttl_secs: 0}", "credentials.sign_in_ttl_secs: Input should be greater than 0"),
        ("{keys: x}", "credentials.keys: unknown field"),
    ],
)
def test_a_bad_credentials_section_is_refused_naming_the_field(section: str, message: str) -> None:
    assert message in error_of(f"credentials: {section}")


def test_a_client_secret_is_redacted_and_scrubbed_like_a_header() -> None:
    config = parse_settings(f"servers: [{{{HTTP}, auth: {{client_id: gw, client_secret: literal-secret-42}}}}]")
    stored = config.servers[0].connection_config()
    assert redact_connection_config(stored)["auth"]["client_secret"] == "***"
    assert redact_connection_config(stored)["auth"]["client_id"] == "gw"
    assert "literal-secret-42" in secret_values(stored, {})


async def test_the_api_refuses_auth_on_a_stdio_server_naming_the_field(tmp_path: Path) -> None:
    async with serve_admin(settings_for(data_dir=str(tmp_path))) as admin:
        body = {"name": "s", "transport_type": "STDIO", "connection_config": {"command": "x", "auth": "oauth"}}
        answer = await admin.http.post("/api/v1/aggregator/servers", json=body)
        assert answer.status_code == 422
        detail = answer.json()["detail"][0]
        assert detail["loc"] == ["body", "connection_config", "auth"]
        assert "only allowed for transport http, sse, openapi or a2a" in detail["msg"]


def test_the_key_is_made_once_in_the_data_dir_with_mode_0600(tmp_path: Path) -> None:
    box = SecretBox.open(tmp_path, {})
    key_file = tmp_path / KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    sealed = box.seal("a token")
    assert "a token" not in sealed and sealed != box.seal("a token")
    assert SecretBox.open(tmp_path, {}).open_sealed(sealed) == "a token"
    assert SecretBox.open(tmp_path, {KEY_ENV: Fernet.generate_key().decode()}).open_sealed(sealed) is None


def test_the_key_from_the_environment_wins_and_a_bad_one_is_named() -> None:
    key = Fernet.generate_key().decode()
    sealed = SecretBox(key.encode()).seal("x")
    assert SecretBox.open(Path("/nonexistent"), {KEY_ENV: key}).open_sealed(sealed) == "x"
    with pytest.raises(ConfigError) as info:
        SecretBox.open(Path("/nonexistent"), {KEY_ENV: "too-short"})
    assert str(info.value).startswith("MCP_AGGREGATOR_SECRET_KEY: must be a Fernet key")
