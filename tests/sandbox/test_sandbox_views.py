"""The sandbox is visible: the REST server detail, and it survives registration over REST."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.sandbox import SandboxConfig
from tests.admin.conftest import API, admin_settings, serve_admin, stdio_body, wait_for_status
from tests.conftest import REPO, stdio_fixture
from tests.registry.conftest import Database

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def db(tmp_path: Path) -> Database:
    return Database(f"sqlite+aiosqlite:///{tmp_path / 'registry.db'}", "mcp")


async def test_a_server_registered_over_rest_keeps_its_sandbox_and_the_detail_shows_it(tmp_path: Path) -> None:
    grant = tmp_path / "grant"
    grant.mkdir()
    sandbox = {"read": [str(grant)], "network": "none", "memory_mb": 256}
    async with serve_admin(admin_settings(db(tmp_path))) as admin:
        created = await admin.http.post(f"{API}/servers", json=stdio_body("boxed", sandbox=sandbox))
        assert created.status_code == 201, created.text
        await wait_for_status(admin.gateway, "boxed", ServerStatus.CONNECTED)
        detail = (await admin.http.get(f"{API}/servers/{created.json()['id']}")).json()
        assert detail["connection_config"]["sandbox"] == sandbox
        assert detail["sandbox"] == {
            "enabled": True,
            "active": True,
            "read": [str(grant)],
            "write": [],
            "network": "none",
            "memory_mb": 256,
            "processes": 1024,
            "cpu_secs": None,
            "cwd": str(REPO),  # read-only, as a grant
            "warnings": [],
            "limit_hit": None,
        }
        record = await admin.gateway.registry.get_server_by_name("boxed")
        assert record.connection_config["sandbox"] == sandbox


async def test_a_grant_that_does_not_exist_puts_the_server_in_error_naming_the_field(tmp_path: Path) -> None:
    # From the configuration, so that one connection attempt is made: the refusal needs no
    # process, and a registration's own connect request could come after it and start another.
    missing = str(tmp_path / "missing")
    boxed = stdio_fixture("boxed", sandbox=SandboxConfig(write=(missing,)))
    async with serve_admin(admin_settings(db(tmp_path), boxed)) as admin:
        await admin.settle()
        assert admin.gateway.supervisors["boxed"].status is ServerStatus.ERROR
        detail = (await admin.http.get(f"{API}/servers/{await admin.server_id('boxed')}")).json()
        assert f"sandbox.write[0]: '{missing}' does not exist" in detail["error_message"]


async def test_an_unknown_network_value_is_refused_at_registration_naming_the_field(tmp_path: Path) -> None:
    async with serve_admin(admin_settings(db(tmp_path))) as admin:
        answer = await admin.http.post(f"{API}/servers", json=stdio_body("boxed", sandbox={"network": "lan"}))
        assert answer.status_code == 422
        assert "sandbox.network" in answer.text and "must be outbound, none, host" in answer.text
