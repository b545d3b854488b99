"""The admin token and the refusal to bind openly without one."""

from __future__ import annotations

import pytest

from mcp_aggregator.admin import check_bind_allowed
from mcp_aggregator.admin.auth import is_loopback, token_matches
from mcp_aggregator.errors import ConfigError
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


def test_binding_beyond_loopback_without_a_token_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^refusing to bind to 0\.0\.0\.0 without serve\.admin_token$"):
        check_bind_allowed("0.0.0.0", None)
    with pytest.raises(ConfigError, match=r"without serve\.admin_token"):
        check_bind_allowed("10.0.0.5", "")


def test_binding_is_allowed_on_loopback_or_with_a_token() -> None:
    check_bind_allowed("127.0.0.1", None)
    check_bind_allowed("0.0.0.0", TOKEN)


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
    async with serve_admin(admin_settings(sqlite_db, admin_token=TOKEN)) as admin:
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


async def test_without_a_token_the_api_is_open_on_loopback(sqlite_db: Database) -> None:
    async with serve_admin(admin_settings(sqlite_db)) as admin:
        assert (await admin.http.get(f"{API}/servers")).status_code == 200
