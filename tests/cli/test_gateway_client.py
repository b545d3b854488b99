"""Where the CLI looks for the gateway and its token, and a gateway that is not there."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from anyio.abc import ByteStream

from mcp_aggregator.cli.gateway_client import GatewayTarget, api_error_message, query_string
from mcp_aggregator.errors import AdminClientError
from mcp_aggregator.settings import Settings
from tests.conftest import REPO
from tests.ports import free_port
from tests.upstreams.http_origin import Seen, response, serving, tls_files


def test_a_gateway_that_is_down_is_a_clear_message_and_exit_code_one() -> None:
    port = free_port()
    result = subprocess.run(
        [sys.executable, "-m", "mcp_aggregator", "servers", "list", "--gateway", f"http://127.0.0.1:{port}",
         "--token", "t" * 20],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"mcp-aggregator: error: no gateway answers at http://127.0.0.1:{port} (is it running? start it "
        "with `mcp-aggregator serve`, or point at it with --gateway)"
    )


def test_the_token_comes_from_the_option_then_the_environment_then_the_config_then_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "admin_token").write_text("from-the-data-dir-token\n")
    settings = Settings.model_validate({"serve": {"data_dir": str(tmp_path), "port": 9001, "host": "0.0.0.0"}})
    monkeypatch.delenv("MCP_AGGREGATOR_TOKEN", raising=False)
    assert GatewayTarget.resolve(settings, gateway=None, token=None) == GatewayTarget(
        "http://127.0.0.1:9001", "from-the-data-dir-token"
    )
    configured = settings.model_copy(update={"serve": settings.serve.model_copy(update={"admin_token": "c" * 16})})
    assert GatewayTarget.resolve(configured, gateway=None, token=None).token == "c" * 16
    monkeypatch.setenv("MCP_AGGREGATOR_TOKEN", "from-the-environment")
    assert GatewayTarget.resolve(configured, gateway=None, token=None).token == "from-the-environment"
    assert GatewayTarget.resolve(configured, gateway="http://h:1/", token="opt").base_url == "http://h:1"
    assert GatewayTarget.resolve(configured, gateway=None, token="opt").token == "opt"


def test_without_a_configuration_the_default_address_is_used_and_a_missing_token_is_explained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_AGGREGATOR_TOKEN", raising=False)
    monkeypatch.chdir(tmp_path)
    assert GatewayTarget.resolve(None, gateway=None, token="t").base_url == "http://127.0.0.1:8765"
    with pytest.raises(AdminClientError, match=r"no admin token: pass --token, set \$MCP_AGGREGATOR_TOKEN"):
        GatewayTarget.resolve(None, gateway=None, token=None)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"detail": "Server already exists: x"}, "Server already exists: x"),
        ({"detail": [{"msg": "name: bad"}, {"msg": "transport_type: bad"}]}, "name: bad; transport_type: bad"),
        ({"detail": {"message": "Tool rug.weather is held", "server": "rug"}}, "Tool rug.weather is held"),
        ({"detail": {"field": "maxResults", "reason": "too big"}}, "maxResults: too big"),
        ("<html>", "<html>"),
        (None, "the gateway answered 500"),
    ],
)
def test_api_errors_become_one_line_naming_the_field(body: object, message: str) -> None:
    assert api_error_message(500, body) == message


async def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "mcp_aggregator", *args]
    return await anyio.run_process(argv, cwd=REPO, env={**os.environ, **env}, check=False)


def _tls_origin(tmp_path: Path) -> tuple[Path, ssl.SSLContext]:
    ca, cert, key = tls_files(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    return ca, server_tls


async def _servers_answer(seen: Seen, stream: ByteStream) -> bool:
    await stream.send(response(b'[{"name": "alpha"}]'))
    return False


async def test_an_https_gateway_is_reached_with_the_ca_named_in_ssl_cert_file(tmp_path: Path) -> None:
    ca, server_tls = _tls_origin(tmp_path)
    async with serving(_servers_answer, tls=server_tls) as origin:
        gateway = f"https://127.0.0.1:{origin.port}"
        done = await _cli("servers", "list", "--json", "--gateway", gateway, "--token", "t" * 20,
                          env={"SSL_CERT_FILE": str(ca), "MCP_AGGREGATOR_TOKEN": ""})  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout) == [{"name": "alpha"}]
    head = origin.requests[0].head
    assert head.startswith("GET /api/v1/aggregator/servers HTTP/1.1\r\n")
    assert f"\r\nAuthorization: Bearer {'t' * 20}" in head


async def test_an_https_gateway_with_a_certificate_not_trusted_is_a_clear_error(tmp_path: Path) -> None:
    _, server_tls = _tls_origin(tmp_path)
    (tmp_path / "other").mkdir()
    other_ca, _, _ = tls_files(tmp_path / "other")
    async with serving(_servers_answer, tls=server_tls) as origin:
        gateway = f"https://127.0.0.1:{origin.port}"
        done = await _cli("servers", "list", "--gateway", gateway, "--token", "t" * 20,
                          env={"SSL_CERT_FILE": str(other_ca)})  # fmt: skip
    assert done.returncode == 1
    message = done.stderr.decode().strip()
    assert message.startswith(
        f"mcp-aggregator: error: the gateway at {gateway} has a certificate this machine does not trust ("
    )
    assert message.endswith("); name its CA in $SSL_CERT_FILE")
    assert origin.requests == []


async def test_a_gateway_address_that_is_not_http_is_a_clear_error() -> None:
    done = await _cli("servers", "list", "--gateway", "127.0.0.1:8765", "--token", "t" * 20, env={})
    assert done.returncode == 1
    assert done.stderr.decode().strip() == (
        "mcp-aggregator: error: --gateway '127.0.0.1:8765': expected http://HOST[:PORT] or https://HOST[:PORT]"
    )


@pytest.mark.parametrize(
    ("params", "query"),
    [
        ({"q": "two words", "k": 5}, "q=two+words&k=5"),
        ({"include_tools": True, "stale": False}, "include_tools=true&stale=false"),
        ({"server": ["a", "b"], "skip": None}, "server=a&server=b"),
        ({"path": "/x?y=1&z"}, "path=%2Fx%3Fy%3D1%26z"),
    ],
)
def test_query_parameters_are_written_as_httpx_wrote_them(params: dict[str, object], query: str) -> None:
    assert query_string(params) == query
