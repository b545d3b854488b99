"""The admin API is never open: a token is made at first start, kept private, and signs the page in."""

from __future__ import annotations

import stat
from pathlib import Path

from mcp_aggregator.admin.admin_token import ADMIN_TOKEN_FILE, admin_token_in, read_admin_token
from mcp_aggregator.registry import Registry, RegistrySettings
from tests.serve.http_face import API, face_settings, http_face


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_token_is_made_once_and_kept_with_owner_only_access(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert read_admin_token(data) is None
    token = admin_token_in(data)
    assert len(token) >= 40
    assert mode(data) == 0o700 and mode(data / ADMIN_TOKEN_FILE) == 0o600
    assert admin_token_in(data) == token


def test_a_token_file_left_readable_is_tightened(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = admin_token_in(data)
    (data / ADMIN_TOKEN_FILE).chmod(0o644)
    data.chmod(0o755)
    assert admin_token_in(data) == token
    assert mode(data) == 0o700 and mode(data / ADMIN_TOKEN_FILE) == 0o600


async def test_the_registry_file_and_its_folder_are_private(tmp_path: Path) -> None:
    db = tmp_path / "state" / "registry.db"
    async with Registry(RegistrySettings(database_url=f"sqlite+aiosqlite:///{db}")):
        pass
    assert mode(db) == 0o600 and mode(db.parent) == 0o700


async def test_with_no_admin_token_configured_the_api_wants_the_one_made_at_first_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with http_face(face_settings(data)) as face:
        assert face.sign_in_link == f"{face.base_url}/#token={read_admin_token(data)}"
        async with face.client() as anonymous:
            assert (await anonymous.get(f"{API}/servers")).status_code == 401
            assert (await anonymous.get("/metrics")).status_code == 401
            page = await anonymous.get("/")
            assert page.status_code == 200, "the page itself carries no data"
            assert page.headers["x-frame-options"] == "DENY"
            assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
            assert "new URLSearchParams(location.hash.slice(1))" in page.text
        async with face.admin() as admin:
            assert (await admin.get(f"{API}/servers")).status_code == 200
        first = face.admin_token
    async with http_face(face_settings(data)) as face:
        assert face.admin_token == first, "a restart keeps the token, so bookmarks and scripts keep working"


async def test_a_configured_admin_token_is_used_and_nothing_is_written(tmp_path: Path) -> None:
    data = tmp_path / "data"
    configured = "configured-admin-token-0123456789"
    async with http_face(face_settings(data, admin_token=configured)) as face:
        assert face.admin_token == configured
        async with face.client(Authorization=f"Bearer {configured}") as admin:
            assert (await admin.get(f"{API}/servers")).status_code == 200
    assert read_admin_token(data) is None
