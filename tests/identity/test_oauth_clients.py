"""OAuth access tokens mapped to named clients and profiles by their claims, through the
whole HTTP face (``serve_http``) and a real JWKS; policies read the claims."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from mcp.shared.exceptions import MCPError

from mcp_aggregator.settings import Settings
from tests.conftest import stdio_fixture
from tests.identity.test_profiles_over_http import client_of, names
from tests.serve.http_face import face_settings, http_face
from tests.serve.test_client_auth import AUDIENCE, jwks_server, mint
from tests.serve.test_host_guard import INITIALIZE, MCP_HEADERS

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def signing_key() -> RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def claims_settings(tmp_path: Path, issuer: str) -> Settings:
    base = face_settings(
        tmp_path,
        stdio_fixture("alpha"),
        exposure="passthrough",
        oauth={"issuer": issuer, "audience": AUDIENCE, "jwks_url": f"{issuer}/jwks", "required_scopes": ["mcp"]},
    )
    data = base.model_dump(mode="json")
    data["profiles"] = [{"name": "code", "tools": ["alpha.echo", "alpha.add"]}]
    data["clients"] = [
        {"name": "engineers", "match": {"groups": ["eng"]}, "profiles": ["code"]},
        {"name": "admins", "match": {"sub": ["root"]}, "profiles": ["default"]},
    ]
    data["policies"] = [
        {
            "name": "interns-read-only",
            "deny": 'has(client.claims.groups) && "interns" in client.claims.groups && !tool.annotations.readOnlyHint',
        }
    ]
    return Settings.model_validate(data)


async def test_token_claims_choose_the_client_and_its_profiles(tmp_path: Path, signing_key: RSAPrivateKey) -> None:
    async with jwks_server(signing_key) as (issuer, _fetches), http_face(claims_settings(tmp_path, issuer)) as face:
        engineer = mint(signing_key, issuer, sub="ann", groups=["eng"])
        intern = mint(signing_key, issuer, sub="ian", groups=["eng", "interns"])
        stranger = mint(signing_key, issuer, sub="sam", groups=["sales"])
        root = mint(signing_key, issuer, sub="root")
        async with face.client() as http:
            statuses = {}
            for label, token, path in [
                ("engineer on code", engineer, "/mcp/code"),
                ("engineer on /mcp", engineer, "/mcp"),
                ("stranger on code", stranger, "/mcp/code"),
                ("stranger on /mcp", stranger, "/mcp"),
                ("root on /mcp", root, "/mcp"),
            ]:
                headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
                statuses[label] = (await http.post(path, json=INITIALIZE, headers=headers)).status_code
        assert statuses == {
            "engineer on code": 200,
            "engineer on /mcp": 403,
            "stranger on code": 403,  # claim rules exist and none matched: no profile at all
            "stranger on /mcp": 403,
            "root on /mcp": 200,
        }
        async with client_of(f"{face.mcp_url}/code", engineer) as ann:
            assert await names(ann) == ["mcp__proxy__aggregator__query", "alpha__echo", "alpha__add"]
            assert (await ann.call_tool("alpha__add", {"a": 2, "b": 3})).structured_content == {"total": 5}
        async with client_of(f"{face.mcp_url}/code", intern) as ian:
            assert await names(ian) == ["mcp__proxy__aggregator__query", "alpha__echo"]
            with pytest.raises(MCPError) as denied:
                await ian.call_tool("alpha__add", {"a": 2, "b": 3})
            assert denied.value.error.data == {"rule": "interns-read-only", "tool": "alpha.add"}
