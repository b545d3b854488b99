"""DNS rebinding and cross-site requests are refused on every route before any handler runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_aggregator.serve.host_guard import HostPolicy, split_host
from tests.conftest import REPO
from tests.serve.http_face import API, face_settings, http_face

ROUTES = [
    ("GET", "/mcp"),
    ("POST", "/mcp"),
    ("DELETE", "/mcp"),
    ("GET", f"{API}/servers"),
    ("POST", f"{API}/servers"),
    ("GET", f"{API}/state"),
    ("GET", "/"),
    ("GET", "/metrics"),
    ("GET", "/healthz"),
    ("GET", "/docs"),
    ("GET", "/openapi.json"),
    ("GET", "/no/such/route"),
]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("127.0.0.1:8765", ("127.0.0.1", "8765")),
        ("LOCALHOST", ("localhost", None)),
        ("[::1]:80", ("[::1]", "80")),
        ("[::1]", ("[::1]", None)),
        ("evil.example:8765", ("evil.example", "8765")),
    ],
)
def test_host_headers_split_into_name_and_port(value: str, expected: tuple[str, str | None]) -> None:
    assert split_host(value) == expected


@pytest.mark.parametrize(
    ("bound", "host", "allowed"),
    [
        ("127.0.0.1", "127.0.0.1:8765", True),
        ("127.0.0.1", "localhost:9999", True),
        ("127.0.0.1", "[::1]:8765", True),
        ("127.0.0.1", "evil.example:8765", False),
        ("127.0.0.1", "127.0.0.1.evil.example", False),
        ("127.0.0.1", "", False),
        ("0.0.0.0", "0.0.0.0:8765", False),
        ("10.1.2.3", "10.1.2.3:8765", True),
        ("::1", "[::1]:8765", True),
    ],
)
def test_only_the_bound_host_and_loopback_names_are_accepted_by_default(bound: str, host: str, allowed: bool) -> None:
    assert HostPolicy(bound).host_allowed(host) is allowed


def test_allowed_hosts_and_origins_extend_the_defaults() -> None:
    policy = HostPolicy(
        "0.0.0.0", ["gw.example.com", "proxy.example.com:8443"], ["https://console.example.com", "http://localhost:*"]
    )
    assert policy.host_allowed("gw.example.com:443") and policy.host_allowed("GW.EXAMPLE.COM")
    assert policy.host_allowed("proxy.example.com:8443") and not policy.host_allowed("proxy.example.com:80")
    assert policy.origin_allowed("https://console.example.com", "gw.example.com")
    assert policy.origin_allowed("http://localhost:5173", "gw.example.com")
    assert policy.origin_allowed("https://gw.example.com", "gw.example.com"), "a page of the gateway itself"
    assert not policy.origin_allowed("https://evil.example", "gw.example.com")
    assert not policy.origin_allowed("null", "gw.example.com")
    assert not HostPolicy("127.0.0.1").origin_allowed("http://localhost:5173", "localhost:8765"), "another local site"


async def test_a_foreign_host_gets_421_on_every_route_even_with_the_admin_token(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face, face.admin() as http:
        for method, path in ROUTES:
            response = await http.request(method, path, headers={"Host": f"evil.example:{face.port}"})
            assert response.status_code == 421, (method, path)
            assert "Host 'evil.example:" in response.json()["detail"]
            assert "serve.allowed_hosts" in response.json()["detail"]


async def test_a_foreign_origin_gets_403_on_every_route(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face, face.admin() as http:
        for origin in ("http://evil.example", f"http://evil.example:{face.port}", "null", "http://localhost:3000"):
            for method, path in ROUTES:
                response = await http.request(method, path, headers={"Origin": origin})
                assert response.status_code == 403, (origin, method, path)
                assert "serve.allowed_origins" in response.json()["detail"]


async def test_loopback_names_the_own_origin_and_no_origin_are_served(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face, face.admin() as http:
        for host in (f"127.0.0.1:{face.port}", f"localhost:{face.port}", f"[::1]:{face.port}", "localhost:1"):
            assert (await http.get("/healthz", headers={"Host": host})).status_code == 200, host
        own = {"Origin": face.base_url}
        assert (await http.get(f"{API}/servers", headers=own)).status_code == 200
        assert (await http.get("/", headers=own)).status_code == 200
        assert (await http.get("/metrics")).status_code == 200
        started = await http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **own})
        assert started.status_code == 200, started.text


async def test_configured_hosts_and_origins_are_served(tmp_path: Path) -> None:
    settings = face_settings(
        tmp_path, allowed_hosts=["gw.example.com"], allowed_origins=["https://console.example.com"]
    )
    async with http_face(settings) as face, face.admin() as http:
        headers = {"Host": "gw.example.com", "Origin": "https://console.example.com"}
        assert (await http.get(f"{API}/servers", headers=headers)).status_code == 200
        started = await http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers})
        assert started.status_code == 200
        assert (await http.get("/healthz", headers={"Host": "other.example.com"})).status_code == 421


async def test_the_rebinding_attack_of_the_issue_registers_and_spawns_nothing(tmp_path: Path) -> None:
    pwned = tmp_path / "PWNED"
    body = {
        "name": "pwn",
        "transport_type": "STDIO",
        "connection_config": {"command": "/bin/sh", "args": ["-c", f"touch {pwned}"]},
        "auto_connect": True,
    }
    async with http_face(face_settings(tmp_path / "data")) as face:
        evil = {"Host": f"evil.example:{face.port}", "Origin": f"http://evil.example:{face.port}"}
        async with face.client() as http:
            rebinding = await http.post(f"{API}/servers", json=body, headers=evil)
            assert rebinding.status_code == 421
            cross_site = await http.post(f"{API}/servers", json=body, headers={"Origin": "http://evil.example"})
            assert cross_site.status_code == 403
            no_token = await http.post(f"{API}/servers", json=body)
            assert no_token.status_code == 401
        # Refused before any handler: no record, no supervisor, so no process could be started.
        assert await face.gateway.registry.list_servers() == []
        assert face.gateway.supervisors == {}
        assert not pwned.exists()


def test_the_guard_is_the_only_rebinding_check_and_covers_mcp() -> None:
    source = (REPO / "src" / "mcp_aggregator" / "serve" / "http_app.py").read_text()
    assert "enable_dns_rebinding_protection=False" in source
    assert "HostOriginGuard" in source
