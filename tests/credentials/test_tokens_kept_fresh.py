"""Tokens refreshed ahead of expiry and once on a 401; a revoked refresh token shows as
``refresh_failed``; a restart (or another replica) uses the stored tokens."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.credentials.secret_box import KEY_ENV
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.settings import Settings
from tests.conftest import settings_for
from tests.credentials.test_sign_in_flow import SETTLE, protected, server_id, sign_in, whoami
from tests.registry.conftest import Database
from tests.serve.http_face import API, face_settings, http_face
from tests.upstream.oauth_servers import oauth_world


async def test_a_token_close_to_expiry_is_refreshed_before_it_is_used(tmp_path: Path) -> None:
    async with oauth_world(access_ttl=5) as world:
        # Tokens live 5 s and the gateway refreshes 60 s ahead: every use refreshes first.
        settings = face_settings(tmp_path, protected(world))
        async with http_face(settings) as face:
            await face.gateway.wait_settled(SETTLE)
            async with face.admin() as http:
                await sign_in(face, http, await server_id(http))
            before = world.provider.refreshed
            assert await whoami(face) == "alice"
            assert world.provider.refreshed > before


async def test_a_401_earns_one_refresh_and_the_call_goes_through(tmp_path: Path) -> None:
    async with oauth_world() as world, http_face(face_settings(tmp_path, protected(world))) as face:
        await face.gateway.wait_settled(SETTLE)
        async with face.admin() as http:
            await sign_in(face, http, await server_id(http))
        world.provider.expire_access_tokens()
        assert await whoami(face) == "alice"
        assert world.provider.refreshed == 1


async def test_a_revoked_refresh_token_shows_refresh_failed_in_the_api_metrics_and_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with oauth_world() as world, http_face(face_settings(tmp_path, protected(world))) as face:
        gateway = face.gateway
        await gateway.wait_settled(SETTLE)
        async with face.admin() as http:
            sid = await server_id(http)
            await sign_in(face, http, sid)
            world.provider.expire_access_tokens()
            world.provider.revoke_refresh_tokens()
            async with Client(face.mcp_url, cache=None) as client:
                with pytest.raises(MCPError):
                    await client.call_tool("protected__whoami", {})
            sup = gateway.supervisor("protected")
            await gateway.wait_until(lambda: sup.status is ServerStatus.ERROR, timeout_secs=SETTLE)
            detail = (await http.get(f"{API}/servers/{sid}")).json()
            assert detail["auth_status"] == "refresh_failed"
            assert "could not be refreshed" in detail["error_message"]
            metrics = (await http.get("/metrics")).text
            assert 'mcp_aggregator_upstream_auth_refresh_failed{server="protected"} 1' in metrics
            assert 'mcp_aggregator_upstream_auth_refresh_failures_total{server="protected"} 1' in metrics
            refusals = [r.getMessage() for r in caplog.records if "refused to refresh" in r.getMessage()]
            assert refusals and "(invalid_grant" in refusals[0] and "refresh_failed" in refusals[0]
            # Parked, not retried: the authorization server hears nothing more until a sign-in.
            assert sup.status is ServerStatus.ERROR and sup.connection is None
            page = await sign_in(face, http, sid)
            assert "connected protected" in page.text
            assert (await http.get(f"{API}/servers/{sid}")).json()["auth_status"] == "signed_in"
        assert await whoami(face) == "alice"


async def test_a_restart_uses_the_stored_tokens_without_a_new_sign_in(tmp_path: Path) -> None:
    async with oauth_world() as world:
        settings = face_settings(tmp_path, protected(world))
        async with http_face(settings) as face:
            await face.gateway.wait_settled(SETTLE)
            async with face.admin() as http:
                await sign_in(face, http, await server_id(http))
        issued = len(world.provider.access)
        async with http_face(settings) as face:
            await face.gateway.wait_settled(SETTLE)
            assert face.gateway.supervisor("protected").status is ServerStatus.CONNECTED
            assert await whoami(face) == "alice"
        assert len(world.provider.access) == issued, "no new token was needed"


@pytest.mark.postgres
async def test_another_replica_on_the_same_postgresql_uses_the_tokens_one_signed_in_for(
    tmp_path: Path, postgres: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, Fernet.generate_key().decode())
    async with oauth_world() as world:

        def replica(name: str) -> Settings:
            registry = {"database_url": postgres.url, "pg_schema": postgres.pg_schema}
            return settings_for(
                protected(world), data_dir=str(tmp_path / name), port=0, sections={"registry": registry}
            )

        async with http_face(replica("a")) as first, http_face(replica("b")) as second:
            await first.gateway.wait_settled(SETTLE)
            await second.gateway.wait_settled(SETTLE)
            parked = second.gateway.supervisor("protected")
            assert parked.status is ServerStatus.ERROR
            async with first.admin() as http:
                await sign_in(first, http, await server_id(http))
            # The sign-in reaches the parked replica through the change feed; it connects by itself.
            await second.gateway.wait_until(lambda: parked.status is ServerStatus.CONNECTED, timeout_secs=SETTLE)
            assert await whoami(second) == "alice"
            async with http_face(replica("c")) as third:
                await third.gateway.wait_settled(SETTLE)
                assert third.gateway.supervisor("protected").status is ServerStatus.CONNECTED
                assert await whoami(third) == "alice"
