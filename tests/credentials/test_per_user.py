"""``per_user: true``: each identified client's calls carry that user's own token, kept apart."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.errors import SignInRequiredError
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.relay import Caller
from tests.conftest import settings_for
from tests.credentials.test_sign_in_flow import SETTLE, protected, server_id, sign_in
from tests.serve.http_face import face_settings, http_face
from tests.upstream.oauth_servers import browser_sign_in, oauth_world


async def whoami_as(gateway: Gateway, identity: ClientIdentity) -> str:
    result = await gateway.pipeline.call_tool_result("protected__whoami", {}, caller=Caller(identity=identity))
    assert not result.is_error, result
    return str(result.structured_content["result"] if result.structured_content else "")


async def sign_in_url_for(gateway: Gateway, identity: ClientIdentity) -> str:
    with pytest.raises(SignInRequiredError) as refused:
        await whoami_as(gateway, identity)
    found = re.search(r"signs in once at (\S+) and calls again", str(refused.value))
    assert found, str(refused.value)
    return found.group(1)


async def test_each_user_signs_in_once_and_their_calls_carry_their_own_token(tmp_path: Path) -> None:
    alice = ClientIdentity(name="laptop", subject="alice")
    bob = ClientIdentity(name="bob")  # no subject: the client's name is the key
    async with oauth_world() as world, http_face(face_settings(tmp_path, protected(world, per_user=True))) as face:
        gateway = face.gateway
        await gateway.wait_settled(SETTLE)
        async with face.admin() as http:
            # The server's own sign-in (here by "bob" at the authorization server) connects it.
            await sign_in(face, http, await server_id(http), user="bob")
        url = await sign_in_url_for(gateway, alice)
        page = await browser_sign_in(url, "alice")
        assert page.status_code == 200 and "Signed in to protected as alice" in page.text
        assert await whoami_as(gateway, alice) == "alice"
        # Bob has not signed in as a user: alice's token is never used for him.
        bob_url = await sign_in_url_for(gateway, bob)
        await browser_sign_in(bob_url, "bob")
        assert await whoami_as(gateway, bob) == "bob"
        assert await whoami_as(gateway, alice) == "alice"
        with pytest.raises(SignInRequiredError, match="calling client is not identified"):
            await whoami_as(gateway, ClientIdentity())


async def test_a_client_taking_url_elicitation_is_asked_to_sign_in_and_its_call_then_goes_through(
    tmp_path: Path,
) -> None:
    carol = ClientIdentity(name="carol")
    asked: list[types.ElicitRequestURLParams] = []

    async def ask(request: types.InputRequest) -> types.InputResponse | types.ErrorData:
        assert isinstance(request, types.ElicitRequest)
        assert isinstance(request.params, types.ElicitRequestURLParams)
        asked.append(request.params)
        # The person opens the URL the client shows them and signs in.
        await browser_sign_in(request.params.url, "alice")
        return types.ElicitResult(action="accept")

    url_capable = types.ClientCapabilities(
        elicitation=types.ElicitationCapability(url=types.UrlElicitationCapability())
    )
    caller = Caller(capabilities=url_capable, ask=ask, identity=carol)
    async with oauth_world() as world, http_face(face_settings(tmp_path, protected(world, per_user=True))) as face:
        gateway = face.gateway
        await gateway.wait_settled(SETTLE)
        async with face.admin() as http:
            await sign_in(face, http, await server_id(http), user="bob")
        result = await gateway.pipeline.call_tool_result("protected__whoami", {}, caller=caller)
        assert not result.is_error and result.structured_content == {"result": "alice"}
        assert len(asked) == 1 and asked[0].mode == "url" and "Sign in to protected" in asked[0].message
        await gateway.pipeline.call_tool_result("protected__whoami", {}, caller=caller)
        assert len(asked) == 1, "signed in once"


async def test_the_per_user_stage_keeps_the_fast_path_settling_calls_by_callback(tmp_path: Path) -> None:
    async with Gateway(face_settings(tmp_path)) as gateway:
        assert gateway.pipeline.errors_only


ALICE_TOKEN = "alice-client-token-0123456789"
CAROL_TOKEN = "carol-client-token-9876543210"


@asynccontextmanager
async def mcp_client(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,  # type: ignore[arg-type]
    ):
        yield client


async def test_named_clients_over_http_each_get_their_own_sign_in_and_their_own_token(tmp_path: Path) -> None:
    clients = [
        {"name": "alice", "token": ALICE_TOKEN, "profiles": ["default"]},
        {"name": "carol", "token": CAROL_TOKEN, "profiles": ["default"]},
    ]
    async with oauth_world() as world:
        settings = settings_for(
            protected(world, per_user=True), data_dir=str(tmp_path), port=0, sections={"clients": clients}
        )
        async with http_face(settings) as face:
            await face.gateway.wait_settled(SETTLE)
            async with face.admin() as http:
                await sign_in(face, http, await server_id(http), user="bob")
            async with mcp_client(face.mcp_url, ALICE_TOKEN) as alice:
                with pytest.raises(MCPError) as refused:
                    await alice.call_tool("protected__whoami", {})
                found = re.search(r"signs in once at (\S+) and calls again", refused.value.error.message)
                assert found, refused.value.error.message
                page = await browser_sign_in(found.group(1), "alice")
                assert "Signed in to protected as alice" in page.text
                assert (await alice.call_tool("protected__whoami", {})).structured_content == {"result": "alice"}
            async with mcp_client(face.mcp_url, CAROL_TOKEN) as carol:
                with pytest.raises(MCPError, match="user carol signs in once at"):
                    await carol.call_tool("protected__whoami", {})
