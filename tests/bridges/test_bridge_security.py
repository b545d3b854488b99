"""Security schemes of an OpenAPI document and of an agent card, satisfied by the server's
``security`` setting, through the gateway to the SDK client: a FastAPI service that checks an
API key in a header, the query string and a cookie, and HTTP basic; the books service's
bearer token; an a2a-sdk agent that checks a bearer token and, for one skill, a partner key.
A scheme without a secret, and a secret for a scheme nobody declared, say what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from mcp_aggregator.bridges.security_schemes import (
    Placement,
    Scheme,
    SchemeKind,
    openapi_requirement,
    placement,
)
from mcp_aggregator.errors import MissingCredentialError
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.registry import redact_connection_config
from mcp_aggregator.settings import ServerConfig, secret_values
from tests.admin.conftest import serve_admin
from tests.bridges.a2a_agent import AGENT_TOKEN, PARTNER_KEY, TravelExecutor, build_agent_app
from tests.bridges.asgi_serving import serve_asgi, serve_built
from tests.bridges.books_api import TOKEN, build_books_app
from tests.bridges.keyed_api import COOKIE_KEY, HEADER_KEY, PASSWORD, QUERY_KEY, USER, build_keyed_app
from tests.cli.conftest import run_cli
from tests.conftest import running_gateway, settings_for

PETSTORE = Path(__file__).parent / "fixtures" / "petstore-openapi.yaml"

SCHEMES = {
    "bearer": Scheme("bearer", SchemeKind.BEARER),
    "basic": Scheme("basic", SchemeKind.BASIC),
    "hkey": Scheme("hkey", SchemeKind.API_KEY, "header", "X-Key"),
    "qkey": Scheme("qkey", SchemeKind.API_KEY, "query", "key"),
    "ckey": Scheme("ckey", SchemeKind.API_KEY, "cookie", "sid"),
    "oauth": Scheme("oauth", SchemeKind.OAUTH2),
    "tls": Scheme("tls", SchemeKind.UNSUPPORTED, detail="mutualTLS"),
}


@pytest.mark.parametrize(
    ("security", "secrets", "expected"),
    [
        ([{"bearer": []}], {"bearer": "t"}, Placement(headers={"Authorization": "Bearer t"})),
        ([{"oauth": ["read"]}], {"oauth": "t"}, Placement(headers={"Authorization": "Bearer t"})),
        ([{"basic": []}], {"basic": "a:b"}, Placement(headers={"Authorization": "Basic YTpi"})),
        ([{"hkey": []}], {"hkey": "k"}, Placement(headers={"X-Key": "k"})),
        ([{"qkey": []}], {"qkey": "k"}, Placement(params={"key": "k"})),
        ([{"ckey": []}], {"ckey": "k"}, Placement(cookies={"sid": "k"})),
        ([{"tls": []}, {"hkey": []}], {"hkey": "k", "tls": "x"}, Placement(headers={"X-Key": "k"})),
        (
            [{"hkey": [], "qkey": []}],
            {"hkey": "h", "qkey": "q"},
            Placement(headers={"X-Key": "h"}, params={"key": "q"}),
        ),
        ([{}], {}, Placement()),
        ([], {}, Placement()),
    ],
)
def test_the_first_alternative_with_every_secret_is_placed_where_its_scheme_says(
    security: list[dict[str, list[str]]], secrets: dict[str, str], expected: Placement
) -> None:
    requirement = openapi_requirement(security)
    assert requirement is not None
    assert placement(requirement, SCHEMES, secrets, server="s", what="w") == expected


def test_a_header_the_headers_setting_sends_satisfies_its_scheme() -> None:
    requirement = openapi_requirement([{"bearer": []}])
    assert requirement is not None
    placed = placement(requirement, SCHEMES, {}, server="s", what="w", sent_headers=frozenset({"authorization"}))
    assert placed == Placement()


def test_a_missing_secret_names_the_schemes_and_the_line_to_add() -> None:
    requirement = openapi_requirement([{"hkey": []}, {"tls": []}])
    assert requirement is not None
    with pytest.raises(MissingCredentialError) as caught:
        placement(requirement, SCHEMES, {}, server="books", what="operation listBooks")
    assert str(caught.value) == (
        "operation listBooks needs a credential for security scheme 'hkey' (apiKey in header 'X-Key') or "
        "'tls' (mutualTLS), and none is configured; add to server 'books': security: {hkey: \"${BOOKS_HKEY}\"}"
    )


@pytest.mark.parametrize(
    ("config", "words"),
    [
        (
            {"transport": "http", "base_url": "http://x/mcp", "security": {"a": "b"}},
            "only allowed for transport openapi or a2a",
        ),
        ({"transport": "openapi", "spec": "o.json", "security": {"a": ""}}, "a: the secret must be non-empty"),
        ({"transport": "a2a", "base_url": "http://x", "security": {"a": "x\ny"}}, "without CR, LF"),
    ],
)
def test_a_bad_security_setting_is_refused_naming_the_field(config: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ServerConfig.model_validate({"name": "s", **config})
    assert words in str(caught.value)


async def test_api_keys_in_a_header_the_query_and_a_cookie_and_http_basic_reach_the_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KEYED_HEADER", HEADER_KEY)
    security = {
        "headerKey": "${KEYED_HEADER}",
        "queryKey": QUERY_KEY,
        "cookieKey": COOKIE_KEY,
        "basicAuth": f"{USER}:{PASSWORD}",
    }
    async with serve_asgi(build_keyed_app()) as base:
        config = ServerConfig(name="keyed", transport="openapi", spec=f"{base}/openapi.json", security=security)
        async with running_gateway(settings_for(config)) as (_, client):
            answers = {
                op: await client.call_tool(f"keyed__{op}", {}) for op in ("byHeader", "byQuery", "byCookie", "byBasic")
            }
    assert {op: a.structured_content for op, a in answers.items()} == {
        "byHeader": {"via": "header"},
        "byQuery": {"via": "query"},
        "byCookie": {"via": "cookie"},
        "byBasic": {"via": "basic"},
    }


async def test_an_operation_whose_scheme_has_no_secret_fails_naming_the_scheme_and_the_line_to_add() -> None:
    async with serve_asgi(build_keyed_app()) as base:
        config = ServerConfig(
            name="keyed", transport="openapi", spec=f"{base}/openapi.json", security={"queryKey": QUERY_KEY}
        )
        async with running_gateway(settings_for(config)) as (_, client):
            fine = await client.call_tool("keyed__byQuery", {})
            refused = await client.call_tool("keyed__byHeader", {})
    assert fine.structured_content == {"via": "query"}
    assert refused.is_error
    assert refused.content[0].text == (
        "operation byHeader (paths./by-header.get) needs a credential for security scheme 'headerKey' "
        "(apiKey in header 'X-Api-Key'), and none is configured; "
        "add to server 'keyed': security: {headerKey: \"${KEYED_HEADERKEY}\"}"
    )


async def test_the_books_services_bearer_scheme_takes_its_token_from_security() -> None:
    async with serve_asgi(build_books_app()) as base:
        config = ServerConfig(
            name="books", transport="openapi", spec=f"{base}/openapi.json", security={"HTTPBearer": TOKEN}
        )
        async with running_gateway(settings_for(config)) as (_, client):
            answer = await client.call_tool("books__getBook", {"book_id": 1})
    assert not answer.is_error
    assert answer.structured_content["title"] == "Dune"


async def test_a_secret_for_a_scheme_the_document_does_not_declare_puts_the_server_in_error() -> None:
    async with serve_asgi(build_books_app()) as base:
        config = ServerConfig(name="books", transport="openapi", spec=f"{base}/openapi.json", security={"bearer": "x"})
        async with running_gateway(settings_for(config)) as (gateway, _):
            supervisor = gateway.supervisors["books"]
            status, message = supervisor.status, supervisor.error_message
    assert status is ServerStatus.ERROR
    assert message is not None
    assert (
        "security.bearer: the document has no security scheme 'bearer' (components.securitySchemes has: HTTPBearer)"
        in message
    )


async def test_an_agent_cards_schemes_take_their_secrets_per_skill() -> None:
    partner_keys: list[str | None] = []
    executor = TravelExecutor()
    security = {"bearer": AGENT_TOKEN, "partnerKey": PARTNER_KEY}
    async with serve_built(lambda url: build_agent_app(url, executor, secured=partner_keys)) as base:
        config = ServerConfig(name="travel", transport="a2a", base_url=base, security=security)
        async with running_gateway(settings_for(config)) as (_, client):
            hello = await client.call_tool("travel__greet", {"message": "hi"})
            partner_keys.clear()
            flight = await client.call_tool("travel__book_flight", {"message": "LIS to OSL"})
    assert [block.text for block in hello.content] == ["Hello! You said: hi"]
    assert flight.is_error and "No seats left" in flight.content[0].text  # the agent's own answer: it got through
    assert partner_keys and set(partner_keys) == {PARTNER_KEY}


async def test_a_skill_whose_scheme_has_no_secret_fails_naming_it_and_the_others_still_work() -> None:
    partner_keys: list[str | None] = []
    async with serve_built(lambda url: build_agent_app(url, TravelExecutor(), secured=partner_keys)) as base:
        config = ServerConfig(name="travel", transport="a2a", base_url=base, security={"bearer": AGENT_TOKEN})
        async with running_gateway(settings_for(config)) as (_, client):
            hello = await client.call_tool("travel__greet", {"message": "hi"})
            flight = await client.call_tool("travel__book_flight", {"message": "LIS to OSL"})
    assert not hello.is_error
    assert flight.is_error
    assert flight.content[0].text == (
        "skill book_flight needs a credential for security scheme 'bearer' (http bearer) + 'partnerKey' "
        "(apiKey in header 'X-Partner-Key'), and none is configured; "
        "add to server 'travel': security: {partnerKey: \"${TRAVEL_PARTNERKEY}\"}"
    )
    assert partner_keys == [None]


async def test_a_secret_for_a_scheme_the_card_does_not_declare_puts_the_server_in_error() -> None:
    async with serve_built(lambda url: build_agent_app(url, TravelExecutor(), secured=[])) as base:
        config = ServerConfig(name="travel", transport="a2a", base_url=base, security={"token": AGENT_TOKEN})
        async with running_gateway(settings_for(config)) as (gateway, _):
            message = gateway.supervisors["travel"].error_message
    assert message is not None
    assert (
        "security.token: the agent card has no security scheme 'token' (securitySchemes has: bearer, partnerKey)"
        in message
    )


async def test_check_config_names_each_operation_whose_scheme_has_no_secret(tmp_path: Path) -> None:
    config = tmp_path / "aggregator.yaml"
    config.write_text(
        "servers:\n"
        f"  - {{name: pets, transport: openapi, spec: '{PETSTORE}', base_url: 'http://127.0.0.1:9/api/v3',"
        " operations: [getPetById, addPet], security: {api_key: '${PETS_KEY}'}}\n"
        f"  - {{name: typo, transport: openapi, spec: '{PETSTORE}', base_url: 'http://127.0.0.1:9/api/v3',"
        " security: {apiKey: x}}\n"
    )
    result = await run_cli("check-config", str(config))
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stdout.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        "warning: server 'pets': operation addPet (paths./pet.post) needs a credential for security scheme "
        "'petstore_auth' (oauth2), and none is configured; "
        "add to server 'pets': security: {petstore_auth: \"${PETS_PETSTORE_AUTH}\"}",
        "warning: server 'typo': security.apiKey: the document has no security scheme 'apiKey' "
        "(components.securitySchemes has: api_key, petstore_auth)",
    ]


def test_security_secrets_are_stored_redacted_and_scrubbed_like_headers() -> None:
    config = ServerConfig(
        name="keyed", transport="openapi", spec="o.json", security={"headerKey": "literal-key-42", "q": "${Q_KEY}"}
    )
    stored = config.connection_config()
    assert stored["security"] == {"headerKey": "literal-key-42", "q": "${Q_KEY}"}
    assert redact_connection_config(stored)["security"] == {"headerKey": "***", "q": "***"}
    assert {"literal-key-42", "expanded-q-key"} <= secret_values(stored, {"Q_KEY": "expanded-q-key"})


async def test_the_api_registers_security_and_shows_it_redacted(tmp_path: Path) -> None:
    async with serve_admin(settings_for(data_dir=str(tmp_path))) as admin:
        body = {
            "name": "keyed",
            "transport_type": "OPENAPI",
            "connection_config": {"spec": str(PETSTORE), "security": {"api_key": "literal-key-42"}},
            "auto_connect": False,
        }
        created = await admin.http.post("/api/v1/aggregator/servers", json=body)
        detail = await admin.http.get(f"/api/v1/aggregator/servers/{created.json()['id']}")
        refused = await admin.http.post(
            "/api/v1/aggregator/servers",
            json={
                **body,
                "name": "web",
                "transport_type": "HTTP",
                "connection_config": {"base_url": "http://h/mcp", "security": {"a": "b"}},
            },
        )
    assert created.status_code == 201, created.text
    assert detail.json()["connection_config"]["security"] == {"api_key": "***"}
    assert "literal-key-42" not in detail.text
    assert refused.status_code == 422
    assert "security: only allowed for transport openapi or a2a" in refused.json()["detail"][0]["msg"]
