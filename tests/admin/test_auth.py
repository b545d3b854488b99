"""The admin token and the refusal to bind openly without one."""

from __future__ import annotations

import pytest

from mcp_aggregator.admin import build_admin_app, check_bind_allowed
from mcp_aggregator.admin.auth import is_loopback, token_matches
from mcp_aggregator.errors import ConfigError
from mcp_aggregator.settings import ServeSettings
from tests.admin.conftest import API, admin_settings, serve_admin
from tests.registry.conftest import Database

TOKEN = "correct horse battery staple"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.53", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("192.168.1.10", False),
        ("example.com", False),
    ],
)
def test_only_loopback_hosts_count_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_binding_beyond_loopback_without_client_auth_for_mcp_is_refused() -> None:
    message = (
        r"^refusing to bind to 0\.0\.0\.0: clients of /mcp must authenticate beyond loopback; "
        r"set serve\.mcp_tokens or serve\.oauth$"
    )
    with pytest.raises(ConfigError, match=message):
        check_bind_allowed(ServeSettings(host="0.0.0.0"))
    with pytest.raises(ConfigError, match=r"set serve\.mcp_tokens or serve\.oauth"):
        check_bind_allowed(ServeSettings(host="10.0.0.5", admin_token=TOKEN))


def test_binding_is_allowed_on_loopback_or_with_client_auth() -> None:
    check_bind_allowed(ServeSettings(host="127.0.0.1"))
    check_bind_allowed(ServeSettings(host="0.0.0.0", mcp_tokens=("a-client-token-0123456789",)))
    oauth = {
        "issuer": "https://id.example.com",
        "audience": "https://gw.example.com/mcp",
        "jwks_url": "https://id.example.com/jwks",
    }
    check_bind_allowed(ServeSettings.model_validate({"host": "0.0.0.0", "oauth": oauth}))


@pytest.mark.parametrize(
    ("header", "matches"),
    [
        (f"Bearer {TOKEN}", True),
        (f"bearer {TOKEN}", True),
        ("Bearer wrong", False),
        (f"Basic {TOKEN}", False),
        (TOKEN, False),
        (None, False),
        ("Bearer ", False),
    ],
)
def test_token_must_come_as_a_bearer_header(header: str | None, matches: bool) -> None:
    assert token_matches(header, TOKEN) is matches


async def test_with_a_token_configured_every_request_but_the_page_needs_it(sqlite_db: Database) -> None:
    async with serve_admin(admin_settings(sqlite_db, admin_token=TOKEN), send_token=False) as admin:
        paths = [f"{API}/servers", f"{API}/state", "/metrics", "/openapi.json", f"{API}/nope"]
        for path in paths:
            anonymous = await admin.http.get(path)
            assert anonymous.status_code == 401, path
            assert anonymous.json() == {"detail": "Missing or invalid admin token"}
            assert anonymous.headers["www-authenticate"] == "Bearer"
            wrong = await admin.http.get(path, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401, path
        posted = await admin.http.post(f"{API}/servers", json={})
        assert posted.status_code == 401

        authorised = {"Authorization": f"Bearer {TOKEN}"}
        assert (await admin.http.get(f"{API}/servers", headers=authorised)).json() == []
        assert (await admin.http.get("/metrics", headers=authorised)).status_code == 200

        page = await admin.http.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")


def test_the_admin_app_cannot_be_built_without_a_token() -> None:
    with pytest.raises(TypeError):
        build_admin_app(None)  # type: ignore[call-arg, arg-type]
    with pytest.raises(ValueError, match="at least 16 characters"):
        build_admin_app(None, token="short")  # type: ignore[arg-type]
