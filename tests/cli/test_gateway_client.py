"""Where the CLI looks for the gateway and its token, and a gateway that is not there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcp_aggregator.cli.gateway_client import GatewayTarget, api_error_message
from mcp_aggregator.errors import AdminClientError
from mcp_aggregator.settings import Settings
from tests.conftest import REPO
from tests.ports import free_port


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
