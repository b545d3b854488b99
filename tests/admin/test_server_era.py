"""``GET /servers/{id}`` says which era the gateway speaks to the upstream, why, and where its
2025-11-25 side session stands."""

from __future__ import annotations

import sys

import mcp_types as types

from mcp_aggregator.relay import Caller
from mcp_aggregator.settings import ServerConfig, Transport
from tests.admin.conftest import API, admin_settings, serve_admin
from tests.conftest import REPO
from tests.registry.conftest import Database
from tests.upstream.callbacks import ROOTS, text_of

ROOTS_CLIENT = types.ClientCapabilities(roots=types.RootsCapability())


async def answer_roots(request: types.InputRequest) -> types.InputResponse | types.ErrorData:
    assert isinstance(request, types.ListRootsRequest)
    return types.ListRootsResult(roots=list(ROOTS))


async def test_the_server_detail_shows_the_era_and_the_side_session_once_it_opened(sqlite_db: Database) -> None:
    dual = ServerConfig(
        name="dual",
        transport=Transport.STDIO,
        command=sys.executable,
        args=("-m", "tests.upstream.dual_era_server", "--transport", "stdio"),
        cwd=str(REPO),
    )
    async with serve_admin(admin_settings(sqlite_db, dual)) as admin:
        await admin.settle()
        [server] = (await admin.http.get(f"{API}/servers")).json()
        era = (await admin.http.get(f"{API}/servers/{server['id']}")).json()["era"]
        assert era["protocol_version"] == "2026-07-28"
        assert "2025-11-25 side session" in era["reason"]
        assert era["side_session"] == {"state": "not opened yet"}
        assert era["relisting"] == "each health check lists tools, prompts and resources"

        caller = Caller(capabilities=ROOTS_CLIENT, ask=answer_roots)
        answered = await admin.gateway.pipeline.call_tool_result("dual.ask_roots", {}, caller=caller)
        assert text_of(answered) == "roots: " + ", ".join(str(root.uri) for root in ROOTS)
        era = (await admin.http.get(f"{API}/servers/{server['id']}")).json()["era"]
        assert era["side_session"] == {"state": "open", "protocol_version": "2025-11-25"}
