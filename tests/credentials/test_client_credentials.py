"""``grant: client_credentials``: the gateway signs in by itself, with no person involved."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_aggregator.health.server_state import ServerStatus
from tests.credentials.test_sign_in_flow import SETTLE, protected, server_id, whoami
from tests.serve.http_face import API, face_settings, http_face
from tests.upstream.oauth_servers import MACHINE_CLIENT_ID, MACHINE_CLIENT_SECRET, oauth_world


async def test_a_machine_client_signs_in_by_itself_and_refreshes_by_asking_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MACHINE_SECRET", MACHINE_CLIENT_SECRET)
    async with oauth_world() as world:
        config = protected(
            world, client_id=MACHINE_CLIENT_ID, client_secret="${MACHINE_SECRET}", grant="client_credentials"
        )
        async with http_face(face_settings(tmp_path, config)) as face:
            await face.gateway.wait_settled(SETTLE)
            assert face.gateway.supervisor("protected").status is ServerStatus.CONNECTED
            assert await whoami(face) == MACHINE_CLIENT_ID
            assert world.provider.machine_grants == 1
            world.provider.expire_access_tokens()
            assert await whoami(face) == MACHINE_CLIENT_ID
            assert world.provider.machine_grants == 2
            async with face.admin() as http:
                sid = await server_id(http)
                assert (await http.get(f"{API}/servers/{sid}")).json()["auth_status"] == "signed_in"
                start = await http.post(f"{API}/servers/{sid}/oauth/start")
                assert start.status_code == 409
                assert "grant client_credentials: it signs in by itself" in start.json()["detail"]


async def test_a_wrong_machine_secret_parks_the_server_as_refresh_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MACHINE_SECRET", "not-the-secret")
    async with oauth_world() as world:
        config = protected(
            world, client_id=MACHINE_CLIENT_ID, client_secret="${MACHINE_SECRET}", grant="client_credentials"
        )
        async with http_face(face_settings(tmp_path, config)) as face:
            await face.gateway.wait_settled(SETTLE)
            sup = face.gateway.supervisor("protected")
            assert sup.status is ServerStatus.ERROR
            assert sup.error_message is not None and "invalid_client" in sup.error_message
            assert world.provider.machine_grants == 0
            async with face.admin() as http:
                sid = await server_id(http)
                assert (await http.get(f"{API}/servers/{sid}")).json()["auth_status"] == "refresh_failed"
